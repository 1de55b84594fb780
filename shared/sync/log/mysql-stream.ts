import ZongJi, { type AnyBinlogEvent, type TableMapEvent } from '@vlasky/zongji';
import { parseSourceUrl } from '../source/url.ts';
import { SOURCE_SILENCE_MS, SourceSilent } from '../source/connection.ts';
import { EXACT_VALUES } from '../source/mysql.ts';
import type { ChangeStream, LogIntervals, LoggedChange, LoggedTransaction } from './change-source.ts';
import { LogPositionLost, PART_CHANGES } from './change-source.ts';
import {
  type BinlogPosition,
  binlogStatus,
  classify,
  comparePositions,
  connectionLost,
  formatPosition,
  later,
  logged,
  type Query,
} from './mysql-binlog.ts';
import { statementEffect } from './mysql-statements.ts';

/** The server sends a heartbeat when it has nothing to send for this long: silence then means a lost source. */
const HEARTBEAT_MS = 1_000;
/**
 * While the log moves on elsewhere (or not at all), an empty part tells the sync where it is, this often
 * (this and SOURCE_SILENCE_MS: unless options.intervals says otherwise).
 */
const PROGRESS_MS = 5_000;
/** Changes waiting for the sync beyond this, reading the log pauses (a sync far behind reads at its own pace). */
const QUEUE_LIMIT = 20_000;
/**
 * Changes held back until their column names are checked (see watchNameReads) beyond this: a full pass
 * instead. Reached only by a transaction this large read just after its table's names were read.
 */
const HOLD_LIMIT = 100_000;

interface BinlogStreamOptions {
  url: string;
  database: string;
  tables: string[];
  serverId: number;
  from: BinlogPosition;
  /** The server's clock (ms) when the stream was asked for: the time of an idle commit. */
  serverClock: number;
  onClose: () => void;
  /** Shorter intervals than PROGRESS_MS and SOURCE_SILENCE_MS (a test's). */
  intervals?: LogIntervals;
}

/** The zongji internals the stream relies on (index.js of @vlasky/zongji 0.9.0). */
interface ZongJiInternals {
  _fetchTableInfo(event: TableMapEvent, next: () => void): void;
}

/** What a mysql2 connection is underneath: its socket, and pause/resume of reading from it. */
interface Mysql2Connection {
  stream: NodeJS.EventEmitter;
  pause(): void;
  resume(): void;
  query(sql: string, callback: (error: Error | null, rows?: unknown) => void): void;
}

type Commit = NonNullable<LoggedTransaction['commit']>;

/** The events read: transactions' bounds (MariaDB's GTID event, MySQL's, BEGIN, COMMIT, Xid), rows, statements. */
const EVENTS = [
  ...['rotate', 'heartbeat', 'mariadbgtid', 'gtid', 'anonymousgtid', 'query', 'xid', 'xaprepare'],
  ...['tablemap', 'writerows', 'updaterows', 'deleterows'],
];

/**
 * One binlog dump from a position, as whole transactions in commit order: row events of the watched
 * tables become changes, a TRUNCATE or DDL of one a `truncate` or `schema` change, and each commit
 * (Xid, COMMIT, or a statement of its own) hands over what its transaction changed.
 */
export class BinlogStream implements ChangeStream {
  /** Settled once the server has accepted the position (or refused it). */
  readonly started: Promise<void>;
  private readonly zongji: ZongJi;
  private readonly options: BinlogStreamOptions;
  private readonly queue: LoggedTransaction[] = [];
  private queued = 0;
  private failure: Error | undefined;
  private closed = false;
  private stopping: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private markStarted: ((error?: Error) => void) | undefined;
  private file: string;
  private changes: LoggedChange[] = [];
  private inTransaction = false;
  /** The transaction in hand went out in parts: its commit goes out even with no change left. */
  private split = false;
  private quiet: Commit | undefined;
  private lastHanded = performance.now();
  private silence: NodeJS.Timeout | undefined;
  private paused = false;
  private fetching = false;
  /**
   * Tables whose column names were read from INFORMATION_SCHEMA with the binlog ending where given,
   * a position the stream has not reached yet: a DDL of the table before it would make them wrong.
   */
  private readonly unchecked = new Map<string, BinlogPosition>();
  /** The transaction in hand has rows named by unchecked names, up to this position. */
  private needs: BinlogPosition | undefined;
  /** Parts held back, in order, until the stream passes `holdUntil` with no DDL of their tables. */
  private held: LoggedTransaction[] = [];
  private heldChanges = 0;
  private holdUntil: BinlogPosition | undefined;
  private readonly serverNow: () => number;
  private readonly silenceMs: number;
  private readonly progressMs: number;

  constructor(options: BinlogStreamOptions) {
    this.options = options;
    this.file = options.from.file;
    this.silenceMs = options.intervals?.silenceMs ?? SOURCE_SILENCE_MS;
    this.progressMs = options.intervals?.idlePartMs ?? PROGRESS_MS;
    const local = performance.now();
    this.serverNow = () => Math.round(options.serverClock + (performance.now() - local));
    this.started = new Promise((resolve, reject) => {
      this.markStarted = (error) => (error ? reject(error) : resolve());
    });
    // The values as the sync reads them elsewhere (source/mysql.ts): exact decimals and 64-bit integers,
    // times as the text the column holds (TIMESTAMP in UTC), JSON as its text.
    this.zongji = new ZongJi({
      uri: parseSourceUrl(options.url).url.replace(/^mariadb:/, 'mysql:'),
      connectTimeout: this.silenceMs,
      ...EXACT_VALUES,
      jsonStrings: true,
    });
    this.watchNameReads();
    this.zongji.on('binlog', (event) => this.onEvent(event));
    this.zongji.on('error', (error) => this.fail(classify(error, formatPosition(options.from))));
    this.zongji.start({
      serverId: options.serverId,
      filename: options.from.file,
      position: options.from.offset,
      includeEvents: EVENTS,
      includeSchema: { [options.database]: options.tables },
    });
    const binlog = this.zongji.connection as unknown as Mysql2Connection;
    // Queued before the dump command: the server then sends a heartbeat whenever it has had nothing
    // to send for a second (https://mariadb.com/kb/en/heartbeat_log_event/), so silence is a fault.
    // A silence limit shorter than three heartbeats (a test's) asks for them more often.
    const heartbeatMs = Math.min(HEARTBEAT_MS, Math.floor(this.silenceMs / 3));
    binlog.query(`SET @master_heartbeat_period = ${heartbeatMs * 1_000_000}`, (error) => {
      if (error) this.fail(error);
    });
    binlog.stream.on('data', () => this.heard());
    binlog.stream.on('close', () => this.fail(connectionLost('the binlog connection closed')));
    this.heard();
  }

  [Symbol.asyncIterator](): AsyncIterator<LoggedTransaction> {
    return {
      next: () => this.next(),
      return: async () => {
        await this.close();
        return { value: undefined, done: true };
      },
    };
  }

  async acknowledge(_position: string): Promise<void> {
    // The source keeps nothing for a replica: the sync keeps the position it opens from next.
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.wake?.();
    this.markStarted?.(new Error('the binlog stream was closed'));
    this.options.onClose();
    await this.stop();
  }

  private async next(): Promise<IteratorResult<LoggedTransaction>> {
    for (;;) {
      const value = this.queue.shift();
      if (value) {
        this.queued -= value.changes.length;
        if (this.paused && this.queued < QUEUE_LIMIT / 2) {
          this.paused = false;
          // zongji resumes by itself once it has read a table's columns.
          if (!this.fetching) (this.zongji.connection as unknown as Mysql2Connection | null)?.resume();
          this.heard();
        }
        return { value, done: false };
      }
      if (this.closed) return { value: undefined, done: true };
      if (this.failure) throw this.failure;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }

  /**
   * zongji reads a table's column names from INFORMATION_SCHEMA when its table map is new (each DDL
   * gives a new one): the names of today, not necessarily those of the rows, which may be older.
   * Where the binlog ended just after that read says which DDL the names know: a DDL holds the
   * table's metadata lock until it is in the binlog, and the read waits for that lock
   * (https://mariadb.com/kb/en/metadata-locking/), so they know every DDL logged before that end and
   * none after. The rows they name are held back until the stream reaches that end: with no DDL of
   * the table on the way, the names were right; with one, they may not be, and the stream ends
   * LogPositionLost (the sync reconciles with a full pass) with none of those rows handed over.
   * With binlog_row_metadata=FULL the binlog names its own columns and zongji reads none
   * (https://dev.mysql.com/doc/refman/8.0/en/replication-options-binary-log.html#sysvar_binlog_row_metadata).
   */
  private watchNameReads() {
    const internals = this.zongji as unknown as ZongJiInternals;
    const read = internals._fetchTableInfo.bind(this.zongji);
    internals._fetchTableInfo = (event, next) => {
      this.fetching = true;
      read(event, () => {
        const control = this.zongji.ctrlConnection as unknown as Mysql2Connection | null;
        if (!control) return;
        const query: Query = (sql) =>
          new Promise((resolve, reject) =>
            control.query(sql, (error, rows) => (error ? reject(error) : resolve(rows as never))),
          );
        binlogStatus(query).then(
          (end) => {
            this.fetching = false;
            this.unchecked.set(event.tableName, end);
            next();
          },
          (error: Error) => this.fail(classify(error, formatPosition(this.options.from))),
        );
      });
    };
  }

  private onEvent(event: AnyBinlogEvent) {
    if (this.closed || this.failure) return;
    const e = event as AnyBinlogEvent & Record<string, unknown>;
    switch (event.getEventName()) {
      case 'rotate':
        this.file = String(e.binlogName);
        // The dump's first event: the server has accepted the position.
        this.markStarted?.();
        this.markStarted = undefined;
        break;
      case 'mariadbgtid':
        // MariaDB's GTID event opens a transaction in place of BEGIN; a standalone one (DDL) is a
        // group of one statement, ended by that statement.
        this.begin(!e.standalone);
        break;
      case 'gtid':
      case 'anonymousgtid':
        this.begin(false);
        break;
      case 'query':
        this.onStatement(String(e.query), String(e.schema ?? ''), event);
        break;
      case 'writerows':
      case 'updaterows':
      case 'deleterows':
        this.onRows(event);
        break;
      case 'xid':
      case 'xaprepare':
        this.commit(event);
        break;
      case 'heartbeat':
        // Sent only when the dump has caught up with the binlog's end: a transaction's end.
        if (!this.inTransaction && this.changes.length === 0 && Number(e.nextPosition) > 0) {
          this.file = String(e.binlogName);
          this.release({ file: this.file, offset: Number(e.nextPosition) });
          this.quiet = { position: `${this.file}:${Number(e.nextPosition)}`, committedAt: this.serverNow() };
          this.progress();
        }
        break;
    }
  }

  private begin(inTransaction: boolean) {
    this.changes = [];
    this.split = false;
    this.needs = undefined;
    this.inTransaction = inTransaction;
  }

  private onStatement(sql: string, schema: string, event: AnyBinlogEvent) {
    const head = sql.trim().toUpperCase();
    if (/^(BEGIN|START TRANSACTION|XA START)\b/.test(head)) return this.begin(true);
    if (/^(COMMIT|ROLLBACK|XA COMMIT|XA ROLLBACK)\b/.test(head) && !/^ROLLBACK\s+TO\b/.test(head)) {
      return this.commit(event);
    }
    const { truncated, reshaped } = statementEffect(sql, schema, this.options.database, this.options.tables);
    if (truncated.length > 0) this.changes.push({ kind: 'truncate', tables: truncated });
    for (const table of reshaped) {
      if (!this.reshaped(table, { file: this.file, offset: event.nextPosition }, sql)) return;
      this.changes.push({ kind: 'schema', table });
    }
    // A statement outside BEGIN … COMMIT (DDL, TRUNCATE) is a transaction of its own.
    if (!this.inTransaction) this.commit(event);
  }

  /** A DDL of a watched table: the names its rows were given so far must not have come after it. */
  private reshaped(table: string, ddl: BinlogPosition, sql: string): boolean {
    // Read again for the rows after it (zongji would keep a table id's names).
    for (const [id, entry] of Object.entries(this.zongji.tableMap)) {
      if (entry.tableName === table) delete this.zongji.tableMap[Number(id)];
    }
    const named = this.unchecked.get(table);
    this.unchecked.delete(table);
    if (named === undefined || comparePositions(ddl, named) > 0) return true;
    const statement = sql.replace(/\s+/g, ' ').slice(0, 80);
    this.fail(
      new LogPositionLost(
        `rows of ${table} logged before "${statement}" were named after it ran, by the columns it left ` +
          '(the binlog does not name them: binlog_row_metadata=FULL would)',
      ),
    );
    return false;
  }

  private onRows(event: AnyBinlogEvent) {
    const e = event as AnyBinlogEvent & { tableId: number; rows: Record<string, unknown>[] };
    const map = this.zongji.tableMap[e.tableId];
    if (!map || map.parentSchema !== this.options.database || !this.options.tables.includes(map.tableName)) return;
    const table = map.tableName;
    this.needs = later(this.needs, this.unchecked.get(table));
    const kind = event.getEventName();
    for (const row of e.rows) {
      if (kind === 'writerows') this.changes.push({ kind: 'insert', table, row: logged(row) });
      else if (kind === 'deleterows') this.changes.push({ kind: 'delete', table, old: logged(row) });
      else {
        const { before, after } = row as { before: Record<string, unknown>; after: Record<string, unknown> };
        this.changes.push({ kind: 'update', table, row: logged(after), old: logged(before) });
      }
    }
    if (this.changes.length >= PART_CHANGES) {
      this.deliver({ changes: this.changes }, this.needs);
      this.changes = [];
      this.split = true;
    }
  }

  private commit(event: AnyBinlogEvent) {
    if (!(event.nextPosition > 0)) {
      return this.fail(new Error(`a commit event without a position in ${this.file} (${event.getEventName()})`));
    }
    const commit = { position: `${this.file}:${event.nextPosition}`, committedAt: event.timestamp || this.serverNow() };
    if (this.changes.length > 0 || this.split) {
      this.deliver({ changes: this.changes, commit }, this.needs);
      this.lastHanded = performance.now();
      this.quiet = undefined;
    } else {
      this.quiet = commit;
      this.progress();
    }
    this.begin(false);
    this.release({ file: this.file, offset: event.nextPosition });
  }

  /** The latest commit of nothing the sync reads, handed over now and then so that its position moves. */
  private progress() {
    if (!this.quiet || performance.now() - this.lastHanded < this.progressMs) return;
    this.deliver({ changes: [], commit: this.quiet });
    this.quiet = undefined;
    this.lastHanded = performance.now();
  }

  /** A part for the sync: now, or once the names of its rows are checked (and all held before it, in order). */
  private deliver(part: LoggedTransaction, needs?: BinlogPosition) {
    this.holdUntil = later(this.holdUntil, needs);
    if (!this.holdUntil) return this.push(part);
    this.held.push(part);
    this.heldChanges += part.changes.length;
    if (this.heldChanges > HOLD_LIMIT) {
      this.fail(
        new LogPositionLost(
          `more than ${HOLD_LIMIT} changes before ${formatPosition(this.holdUntil)}, where the binlog ended when ` +
            'their column names were read: too many to hold until they are checked (binlog_row_metadata=FULL ' +
            'names them in the binlog)',
        ),
      );
    }
  }

  /** The stream has reached `at`: names read up to there are checked, and what waited for them goes. */
  private release(at: BinlogPosition) {
    for (const [table, end] of this.unchecked) if (comparePositions(end, at) <= 0) this.unchecked.delete(table);
    if (!this.holdUntil || comparePositions(this.holdUntil, at) > 0) return;
    this.holdUntil = undefined;
    const held = this.held;
    this.held = [];
    this.heldChanges = 0;
    for (const part of held) this.push(part);
  }

  private push(transaction: LoggedTransaction) {
    this.queue.push(transaction);
    this.queued += transaction.changes.length;
    if (this.queued > QUEUE_LIMIT && !this.paused) {
      this.paused = true;
      clearTimeout(this.silence);
      (this.zongji.connection as unknown as Mysql2Connection | null)?.pause();
    }
    this.wake?.();
  }

  /** Something came from the source: it is not silent. */
  private heard() {
    clearTimeout(this.silence);
    if (this.paused || this.closed || this.failure) return;
    this.silence = setTimeout(() => this.fail(new SourceSilent(this.silenceMs)), this.silenceMs).unref();
  }

  private fail(error: Error) {
    if (this.closed || this.failure) return;
    this.failure = error;
    // Nothing more of a log that can no longer be read right; what was whole before a lost
    // connection is still handed over first.
    if (error instanceof LogPositionLost) this.queue.length = 0;
    this.held = [];
    clearTimeout(this.silence);
    this.markStarted?.(error);
    this.wake?.();
    void this.stop();
  }

  /** Stops the dump: zongji kills the dump's thread and destroys both its connections. */
  private stop(): Promise<void> {
    clearTimeout(this.silence);
    this.stopping ??= new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 2_000).unref();
      this.zongji.once('stopped', () => {
        clearTimeout(timer);
        resolve();
      });
      this.zongji.stop();
    });
    return this.stopping;
  }
}
