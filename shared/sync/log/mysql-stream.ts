import ZongJi, { type AnyBinlogEvent, type TableMapEvent } from '@vlasky/zongji';
import { parseSourceUrl, SOURCE_SILENCE_MS, SourceSilent } from '../source.ts';
import type { ChangeStream, LoggedChange, LoggedRow, LoggedTransaction } from './change-source.ts';
import { LogPositionLost } from './change-source.ts';
import { type BinlogPosition, binlogStatus, comparePositions, formatPosition, type Query } from './mysql-binlog.ts';
import { statementEffect } from './mysql-statements.ts';

/** The server sends a heartbeat when it has nothing to send for this long: silence then means a lost source. */
const HEARTBEAT_MS = 1_000;
/** While the log moves on elsewhere (or not at all), an empty part tells the sync where it is, this often. */
const PROGRESS_MS = 5_000;
/** A transaction larger than this is handed over in parts. */
const PART_CHANGES = 1_000;
/** Changes waiting for the sync beyond this, reading the log pauses (a sync far behind reads at its own pace). */
const QUEUE_LIMIT = 20_000;

export interface BinlogStreamOptions {
  url: string;
  database: string;
  tables: string[];
  serverId: number;
  from: BinlogPosition;
  /** The server's clock (ms) when the stream was asked for: the time of an idle commit. */
  serverClock: number;
  onClose: () => void;
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
  /** Where the binlog ended when each table's column names were last read from INFORMATION_SCHEMA. */
  private readonly namesReadUpTo = new Map<string, BinlogPosition>();
  /** The same, for the names of the rows handed over since the table's last DDL. */
  private readonly rowsNamedUpTo = new Map<string, BinlogPosition>();
  private readonly serverNow: () => number;

  constructor(options: BinlogStreamOptions) {
    this.options = options;
    this.file = options.from.file;
    const local = performance.now();
    this.serverNow = () => Math.round(options.serverClock + (performance.now() - local));
    this.started = new Promise((resolve, reject) => {
      this.markStarted = (error) => (error ? reject(error) : resolve());
    });
    // The values as the sync reads them elsewhere (source.ts): exact decimals and 64-bit integers,
    // times as the text the column holds (TIMESTAMP in UTC), JSON as its text.
    this.zongji = new ZongJi({
      uri: parseSourceUrl(options.url).url.replace(/^mariadb:/, 'mysql:'),
      connectTimeout: SOURCE_SILENCE_MS,
      supportBigNumbers: true,
      bigNumberStrings: true,
      decimalNumbers: false,
      dateStrings: true,
      timezone: 'Z',
      jsonStrings: true,
    });
    this.watchNameReads();
    this.zongji.on('binlog', (event) => this.onEvent(event));
    this.zongji.on('error', (error) => this.fail(classify(error, formatPosition(options.from))));
    this.zongji.start({
      serverId: options.serverId,
      filename: options.from.file,
      position: options.from.offset,
      includeEvents: ['rotate', 'mariadbgtid', 'gtid', 'anonymousgtid', 'query', 'tablemap', 'writerows'].concat([
        'updaterows',
        'deleterows',
        'xid',
        'xaprepare',
        'heartbeat',
      ]),
      includeSchema: { [options.database]: options.tables },
    });
    const binlog = this.zongji.connection as unknown as Mysql2Connection;
    // Queued before the dump command: the server then sends a heartbeat whenever it has had nothing
    // to send for a second (https://mariadb.com/kb/en/heartbeat_log_event/), so silence is a fault.
    binlog.query(`SET @master_heartbeat_period = ${HEARTBEAT_MS * 1_000_000}`, (error) => {
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
   * gives a new one). Where the binlog ended just after that read says which DDL the names know: a
   * DDL holds the table's metadata lock until it is in the binlog, and the read waits for that lock
   * (https://mariadb.com/kb/en/metadata-locking/), so names read up to a position know every DDL
   * logged before it, and none after.
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
            this.namesReadUpTo.set(event.tableName, end);
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
          this.quiet = { position: `${this.file}:${Number(e.nextPosition)}`, committedAt: this.serverNow() };
          this.progress();
        }
        break;
    }
  }

  private begin(inTransaction: boolean) {
    this.changes = [];
    this.split = false;
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

  /**
   * A DDL of a watched table: its names are read again for the rows after it. The rows handed over
   * before it were named by a read of INFORMATION_SCHEMA; if that read came after this DDL (a sync
   * reading back through a migration), they may carry the names it left, not theirs: the stream
   * ends LogPositionLost, and the sync reconciles with a full pass. With binlog_row_metadata=FULL the
   * binlog names its own columns and zongji reads none
   * (https://dev.mysql.com/doc/refman/8.0/en/replication-options-binary-log.html#sysvar_binlog_row_metadata).
   */
  private reshaped(table: string, ddl: BinlogPosition, sql: string): boolean {
    const named = this.rowsNamedUpTo.get(table);
    this.rowsNamedUpTo.delete(table);
    for (const [id, entry] of Object.entries(this.zongji.tableMap)) {
      if (entry.tableName === table) delete this.zongji.tableMap[Number(id)];
    }
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
    const named = this.namesReadUpTo.get(table);
    const before = this.rowsNamedUpTo.get(table);
    if (named && (!before || comparePositions(named, before) > 0)) this.rowsNamedUpTo.set(table, named);
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
      this.push({ changes: this.changes });
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
      this.push({ changes: this.changes, commit });
      this.lastHanded = performance.now();
      this.quiet = undefined;
    } else {
      this.quiet = commit;
      this.progress();
    }
    this.begin(false);
  }

  /** The latest commit of nothing the sync reads, handed over now and then so that its position moves. */
  private progress() {
    if (!this.quiet || performance.now() - this.lastHanded < PROGRESS_MS) return;
    this.push({ changes: [], commit: this.quiet });
    this.quiet = undefined;
    this.lastHanded = performance.now();
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
    this.silence = setTimeout(() => this.fail(new SourceSilent()), SOURCE_SILENCE_MS).unref();
  }

  private fail(error: Error) {
    if (this.closed || this.failure) return;
    this.failure = error;
    // Nothing more of a log that can no longer be read right; what was whole before a lost
    // connection is still handed over first.
    if (error instanceof LogPositionLost) this.queue.length = 0;
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

/** A row as the log gives it: each value as exact text (see change-source.ts), SQL NULL as null. */
function logged(row: Record<string, unknown>): LoggedRow {
  const out: Record<string, string | null> = {};
  for (const [column, value] of Object.entries(row)) out[column] = text(value);
  return out;
}

function text(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  // zongji gives an integer within 2^53 as a number, beyond as its exact text; decimals as text.
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (Buffer.isBuffer(value)) return `\\x${value.toString('hex')}`;
  if (value instanceof Date) return value.toISOString();
  return JSON.stringify(value);
}

/**
 * What an error of the dump means to the sync. Error 1236 is the server refusing to read on: a file
 * or position it no longer has is LogPositionLost; anything else (another replica with this server
 * id, say) ends the connection. Rows zongji cannot name (their table dropped or narrowed since they
 * were written) are lost to the log too: a full pass reconciles.
 */
function classify(error: Error & { errno?: number; code?: string }, from: string): Error {
  const message = error.message.replace(/\s+/g, ' ');
  if (error.errno === 1236 || error.code === 'ER_MASTER_FATAL_ERROR_READING_BINLOG') {
    if (/could not find|purged|position > file size|not in the binlog index|too old/i.test(message)) {
      return new LogPositionLost(`the source's binlog no longer holds ${from}: ${message}`, { cause: error });
    }
    return connectionLost(`the source ended the binlog dump: ${message}`, error);
  }
  if (/schema changed between binlog event and metadata fetch|Insufficient permissions to access/.test(message)) {
    return new LogPositionLost(`binlog rows can no longer be named: ${message}`, { cause: error });
  }
  if (/Control connection unavailable/.test(message)) return connectionLost(message, error);
  return error;
}

/** An error sourceFault (source.ts) takes for an unreachable source: the sync opens the stream again. */
function connectionLost(message: string, cause?: Error): Error {
  return Object.assign(new Error(message, { cause }), { code: 'PROTOCOL_CONNECTION_LOST', fatal: true });
}
