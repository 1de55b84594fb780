/**
 * What the sync reads from the source database's own log (docs/contract.md, section 9, "How changes
 * are found"): the changes its replicas are sent, read outside the app's transactions. An engine's
 * reader implements ChangeSource (postgres.ts: logical decoding with pgoutput, through a replication
 * slot; mysql.ts: the row-format binary log, read as a replica reads it); the sync knows nothing else
 * of either.
 *
 * The log gives rows. The sync does not apply them: it turns them into the parts of teams, users and
 * tokens they touch, and reads those again in one consistent snapshot of the source. So a change
 * delivered twice, or a transaction delivered after its effects were read, costs a read and writes
 * nothing: every position from which a stream is opened is safe, as long as no change after it is
 * missed.
 */

/**
 * A row as the log gives it, by column name. Integers and decimals are their exact text (a bigint id
 * never passes through a double); other values are text where the log has text, else any
 * representation that compares equal exactly when the values are equal. SQL NULL is null.
 */
export type LoggedRow = Readonly<Record<string, string | null>>;

/** One change of one committed transaction, in the order the transaction made them. */
export type LoggedChange =
  | { kind: 'insert'; table: string; row: LoggedRow }
  /**
   * `old` is the row before the update where the log carries it (PostgreSQL: a table with REPLICA
   * IDENTITY FULL, or the key when the key changed; MySQL: binlog_row_image=FULL), else absent.
   */
  | { kind: 'update'; table: string; row: LoggedRow; old?: LoggedRow }
  /** `old` is the whole row (REPLICA IDENTITY FULL, binlog_row_image=FULL) or at least its key. */
  | { kind: 'delete'; table: string; old: LoggedRow }
  /** Every row of these tables went at once (TRUNCATE): the log names no row. */
  | { kind: 'truncate'; tables: string[] }
  /**
   * The table's shape may have changed (a DDL statement in the binlog; on PostgreSQL, a relation
   * message whose columns differ from the last one seen): what the sync reads of it is checked again.
   */
  | { kind: 'schema'; table: string };

/**
 * A committed transaction, or a part of a large one, in commit order. Only the last part carries
 * `commit`: the position to acknowledge once everything up to it is served, and the commit time by
 * the source's clock. A reader may also hand over a part with no changes and a `commit` (a
 * transaction that touched no table the sync reads, or the log's progress while idle), so that the
 * position keeps moving and the source can let its log go.
 */
export interface LoggedTransaction {
  changes: LoggedChange[];
  commit?: { position: string; committedAt: number };
}

/** Changes of a transaction past which a reader hands it over in parts (a commit ends the last). */
export const PART_CHANGES = 1_000;

/** An open stream of the log. Iterating it waits for the next transaction; it ends only by close(). */
export interface ChangeStream extends AsyncIterable<LoggedTransaction> {
  /**
   * Everything up to `position` (a commit's position) is served: the source may let that log go
   * (PostgreSQL: the slot's confirmed position; MySQL: the position the sync keeps for its next start).
   */
  acknowledge(position: string): Promise<void>;
  close(): Promise<void>;
}

export interface ChangeSource {
  /**
   * Where the log ends now: a stream opened there misses nothing committed after this call. The sync
   * takes it before a full pass, and streams from it afterwards.
   */
  currentPosition(): Promise<string>;
  /**
   * Streams the transactions committed after `position`. Throws LogPositionLost when the log no
   * longer holds it (a dropped or invalidated slot, a purged binlog file): the sync then says so,
   * takes currentPosition() and reconciles with a full pass.
   */
  open(position: string): Promise<ChangeStream>;
  /** Bytes of log the source keeps for the sync beyond what it acknowledged (a metric with an alarm). */
  retainedBytes(position: string): Promise<number>;
  close(): Promise<void>;
}

/** The log no longer holds the position the sync needs: said in one line, then a full pass reconciles. */
export class LogPositionLost extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'LogPositionLost';
  }
}

/**
 * The log readers' intervals and silence limit: each engine's reader has its own defaults (postgres-stream.ts,
 * postgres.ts, mysql-stream.ts), which a run keeps; a test gives shorter ones, so that it waits for an idle
 * part, a silence or a busy slot in a fraction of the time (SyncSettings.logIntervals).
 */
export interface LogIntervals {
  /** How long a stream may hear nothing from the source before it fails as unreachable (10 s). */
  silenceMs?: number;
  /** While no transaction comes, how often the log's progress is handed over as an empty part (5 s). */
  idlePartMs?: number;
  /** PostgreSQL: how often a status update asks the server for a keepalive (2 s). */
  pingMs?: number;
  /** PostgreSQL: how often the publication's tables are read again (10 s). */
  watchMs?: number;
  /** PostgreSQL: how long a slot another connection holds is waited for before SlotInUse (10 s). */
  slotBusyMs?: number;
}
