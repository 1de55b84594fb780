import type { Readable } from 'node:stream';
import mysql from 'mysql2';
import pg from 'pg';
import Cursor from 'pg-cursor';

/**
 * The source database, PostgreSQL or MySQL/MariaDB, through maintained drivers (node-postgres with
 * pg-cursor, mysql2), behind the few calls the sync makes: a query, a stream of rows read a batch at
 * a time (never a whole table in memory), a read-only repeatable-read transaction, and a listener
 * for PostgreSQL's notifications. Both engines hand rows back alike: ids and decimals as exact
 * strings, times as the text the column holds, in UTC for columns that carry a zone.
 *
 * SQL is written with `?` parameters; for PostgreSQL they become `$1`, `$2`…
 */
export type SourceEngine = 'postgres' | 'mysql';

export const ENGINE_NAMES: Record<SourceEngine, string> = { postgres: 'PostgreSQL', mysql: 'MySQL/MariaDB' };

export interface SourceUrl {
  engine: SourceEngine;
  /** The URL as given, for the driver. */
  url: string;
  /** The URL with its password replaced by `***`: the only form any message shows. */
  redacted: string;
  database: string;
}

export type Row = Record<string, unknown>;

/** How long a source may stay silent before a call is abandoned (docs/contract.md, sections 8 and 9). */
export const SOURCE_SILENCE_MS = 10_000;

export class SourceUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SourceUrlError';
  }
}

const SCHEMES: Record<string, SourceEngine> = {
  'postgres:': 'postgres',
  'postgresql:': 'postgres',
  'mysql:': 'mysql',
  'mariadb:': 'mysql',
};

/** The URL with its password, if any, as `***`. */
export function redactUrl(text: string): string {
  try {
    const url = new URL(text);
    if (url.password) url.password = '***';
    // Both drivers also read a password from the query (?password=, and pg's ?sslpassword=).
    for (const name of [...url.searchParams.keys()]) {
      if (PASSWORD_PARAMETER.test(name)) url.searchParams.set(name, '***');
    }
    return url.toString();
  } catch {
    // Not a URL: whatever follows a colon before an @ may be a password, and so may a parameter.
    return text.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@').replace(/([?&][^=&]*pass[^=&]*=)[^&]*/gi, '$1***');
  }
}

const PASSWORD_PARAMETER = /pass/i;

/** A source URL, checked: postgres://, postgresql://, mysql:// or mariadb://, naming a database. */
export function parseSourceUrl(text: string): SourceUrl {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new SourceUrlError(`not a database URL: ${redactUrl(text)}`);
  }
  const engine = SCHEMES[url.protocol];
  if (!engine) {
    throw new SourceUrlError(
      `${redactUrl(text)}: the source must be postgres://, postgresql://, mysql:// or mariadb:// ` +
        `(not ${url.protocol}//)`,
    );
  }
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!database) throw new SourceUrlError(`${redactUrl(text)}: the URL names no database (…/<database>)`);
  return { engine, url: text, redacted: redactUrl(text), database };
}

/** A connection to the source: one session, used by one caller at a time. */
export interface SourceConnection {
  readonly engine: SourceEngine;
  query<T extends Row = Row>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Every row of the query, a batch at a time, in order; `onRow` may wait (the read waits for it). */
  stream(sql: string, params: unknown[], onRow: (row: Row) => void | Promise<void>): Promise<void>;
  /** `work` in a read-only transaction at REPEATABLE READ: every read in it sees one state of the source. */
  readConsistently<T>(work: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

const STREAM_BATCH = 500;

/** `?` to `$1`, `$2`… (the sync's own SQL holds no `?` but its parameters). */
export const toPostgresParameters = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

/** Times of PostgreSQL as their text, not a Date in the process's zone (timestamp, timestamptz, date). */
const RAW_TIME_TYPES = new Set([1114, 1184, 1082]);
const postgresTypes = {
  getTypeParser: (oid: number, format?: string) =>
    RAW_TIME_TYPES.has(oid) ? (text: string) => text : pg.types.getTypeParser(oid, format as never),
};

/** Connects, and sets the session up as the sync reads it (UTC, exact numbers). */
export async function connectSource(source: SourceUrl): Promise<SourceConnection> {
  return source.engine === 'postgres' ? connectPostgres(source) : connectMysql(source);
}

async function connectPostgres(source: SourceUrl): Promise<SourceConnection> {
  const client = new pg.Client({
    connectionString: source.url,
    connectionTimeoutMillis: SOURCE_SILENCE_MS,
    types: postgresTypes as never,
    application_name: 'team-resources-sync',
  });
  // A connection that drops between calls is reported by the next call; this keeps the event from
  // being an unhandled error.
  client.on('error', () => {});
  // A call cut or silent leaves the connection broken: every later call fails at once, as
  // unreachable (the sync reconnects), instead of waiting behind it.
  let broken = false;
  const breaks = (error: unknown) => {
    if (sourceFault(error) === 'unreachable') broken = true;
  };
  // Each statement is bounded here, not by the client's query_timeout: node-postgres starts that for
  // a cursor too and never stops it (pg-cursor does not call back), failing every read over 10 s.
  const ask = async (sql: string, params: unknown[] = []) => {
    if (broken) throw new SourceSilent();
    return withinSilence(client.query(toPostgresParameters(sql), params)).catch((error) => {
      breaks(error);
      throw error;
    });
  };
  try {
    await client.connect();
    await ask("SET TIME ZONE 'UTC'");
  } catch (error) {
    await withinSilence(client.end()).catch(() => {});
    throw error;
  }
  return {
    engine: 'postgres',
    query: async <T extends Row>(sql: string, params: unknown[] = []) => (await ask(sql, params)).rows as T[],
    async stream(sql, params, onRow) {
      if (broken) throw new SourceSilent();
      const cursor = client.query(new Cursor(toPostgresParameters(sql), params));
      try {
        for (;;) {
          const rows = await withinSilence(cursor.read(STREAM_BATCH)).catch((error) => {
            breaks(error);
            throw error;
          });
          for (const row of rows) await onRow(row);
          if (rows.length < STREAM_BATCH) break;
        }
      } finally {
        // pg-cursor's close waits for a ReadyForQuery: on a broken connection it would wait for ever.
        if (!broken) await withinSilence(cursor.close()).catch(breaks);
      }
    },
    async readConsistently(work) {
      await ask('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      try {
        return await work();
      } finally {
        await ask('ROLLBACK').catch(() => {});
      }
    },
    // With a call still under way, node-postgres's end() destroys the socket rather than wait.
    close: () => withinSilence(client.end()).catch(() => {}),
  };
}

async function connectMysql(source: SourceUrl): Promise<SourceConnection> {
  const connection = mysql.createConnection({
    uri: source.url.replace(/^mariadb:/, 'mysql:'),
    connectTimeout: SOURCE_SILENCE_MS,
    // Exact: BIGINT and DECIMAL as strings; times as the text the column holds (TIMESTAMP in UTC).
    supportBigNumbers: true,
    bigNumberStrings: true,
    decimalNumbers: false,
    dateStrings: true,
    timezone: 'Z',
    multipleStatements: false,
  });
  connection.on('error', () => {});
  // A call cut or silent stays at the head of mysql2's queue: nothing queued after it would ever
  // start (mysql2 starts a query's own timeout only once it starts). Such a connection is broken:
  // every later call fails at once, as unreachable, and the sync reconnects.
  let broken = false;
  const breaks = (error: unknown) => {
    if (sourceFault(error) === 'unreachable') broken = true;
  };
  const promise = connection.promise();
  /** A query the source must answer within the silence limit, counted from when it is asked. */
  const ask = async (sql: string, params: unknown[] = []) => {
    if (broken) throw new SourceSilent();
    try {
      const [rows] = await withinSilence(promise.query({ sql, timeout: SOURCE_SILENCE_MS }, params));
      return rows;
    } catch (error) {
      breaks(error);
      throw error;
    }
  };
  /** Ends the connection; a broken one is cut (its socket destroyed: a QUIT would wait behind the call). */
  const close = async () => {
    if (!broken) await withinSilence(promise.end()).catch(() => {});
    connection.destroy();
    (connection as unknown as { stream?: { destroy(): void } }).stream?.destroy();
  };
  try {
    await promise.connect();
    await ask("SET time_zone = '+00:00'");
  } catch (error) {
    broken = true;
    await close();
    throw error;
  }
  return {
    engine: 'mysql',
    query: async <T extends Row>(sql: string, params: unknown[] = []) => {
      const rows = await ask(sql, params);
      return (Array.isArray(rows) ? rows : []) as T[];
    },
    stream(sql, params, onRow) {
      if (broken) return Promise.reject(new SourceSilent());
      return new Promise<void>((resolve, reject) => {
        let settled = false;
        let silence: NodeJS.Timeout | undefined;
        let rows: Readable | undefined;
        // The reader's work on the row in hand: the result is whole only once the last row's is done.
        let reading: Promise<void> = Promise.resolve();
        const settle = (error?: unknown, fromSource = true) => {
          if (settled) return;
          settled = true;
          clearTimeout(silence);
          connection.off('error', lost);
          if (error === undefined) return resolve();
          // Stopped by its reader, the rest of the result is read and dropped (mysql2's stream resumes
          // the connection when it is destroyed), and the connection serves the next query.
          rows?.destroy();
          if (fromSource) breaks(error);
          reject(error);
        };
        // mysql2 tells a query that streams (it has no callback) nothing of a lost connection: the
        // connection's 'error' event is the only word of it.
        const lost = (error: Error) => settle(error);
        connection.on('error', lost);
        // Silence is the time spent waiting for the source, not for the reader of a row.
        const awaitSource = () => {
          clearTimeout(silence);
          silence = setTimeout(() => settle(new SourceSilent()), SOURCE_SILENCE_MS).unref();
        };
        awaitSource();
        const result = connection.query(sql, params).stream({ highWaterMark: STREAM_BATCH });
        rows = result;
        result.on('data', (row: Row) => {
          clearTimeout(silence);
          result.pause();
          // onRow may throw at once: as a rejection, not out of mysql2's packet handler.
          reading = Promise.resolve(row)
            .then(onRow)
            .then(
              () => {
                if (settled) return;
                awaitSource();
                result.resume();
              },
              (error) => settle(error, false),
            );
        });
        result.on('error', (error) => settle(error));
        // Node may end the stream while the last row is still being read: its error must not be lost.
        result.on('end', () => void reading.then(() => settle()));
      });
    },
    async readConsistently(work) {
      await ask('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
      await ask('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY');
      try {
        return await work();
      } finally {
        await ask('ROLLBACK').catch(() => {});
      }
    },
    close,
  };
}

/** A call that has waited past SOURCE_SILENCE_MS is abandoned: its connection is then not trusted again. */
async function withinSilence<T>(call: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const silence = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SourceSilent()), SOURCE_SILENCE_MS).unref();
  });
  try {
    return await Promise.race([call, silence]);
  } finally {
    clearTimeout(timer);
  }
}

/** The source sent nothing for SOURCE_SILENCE_MS. */
export class SourceSilent extends Error {
  constructor() {
    super(`no response for ${SOURCE_SILENCE_MS / 1000} s`);
    this.name = 'SourceSilent';
  }
}

/**
 * Listens for PostgreSQL's notifications on `channel` on a connection of its own, calling `onNotify`
 * for each (a trigger's pg_notify reaches the listener only once its transaction commits:
 * https://www.postgresql.org/docs/current/sql-notify.html). `onLost` is told when the connection ends.
 */
export async function listenPostgres(
  source: SourceUrl,
  channel: string,
  onNotify: () => void,
  onLost: (error: Error) => void,
): Promise<{ close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: source.url, connectionTimeoutMillis: SOURCE_SILENCE_MS });
  client.on('error', onLost);
  client.on('end', () => onLost(new Error('the listening connection ended')));
  client.on('notification', onNotify);
  const close = async () => {
    client.removeAllListeners('end');
    await withinSilence(client.end()).catch(() => {});
  };
  await client.connect();
  try {
    await withinSilence(client.query(`LISTEN ${channel}`));
  } catch (error) {
    await close();
    throw error;
  }
  return { close };
}

/** What kind of failure an error of the source is: the sync reports each kind its own way. */
export type SourceFault = 'credentials' | 'database' | 'privileges' | 'schema' | 'unreachable';

const POSTGRES_FAULTS: Record<string, SourceFault> = {
  '28P01': 'credentials', // invalid_password
  '28000': 'credentials', // invalid_authorization_specification
  '3D000': 'database', // invalid_catalog_name
  '42501': 'privileges', // insufficient_privilege
  '42P01': 'schema', // undefined_table
  '42703': 'schema', // undefined_column
  '57P01': 'unreachable', // admin_shutdown
  '57P02': 'unreachable', // crash_shutdown
  '57P03': 'unreachable', // cannot_connect_now
  '53300': 'unreachable', // too_many_connections
};
const MYSQL_FAULTS: Record<string, SourceFault> = {
  ER_ACCESS_DENIED_ERROR: 'credentials',
  ER_DBACCESS_DENIED_ERROR: 'privileges',
  ER_BAD_DB_ERROR: 'database',
  ER_TABLEACCESS_DENIED_ERROR: 'privileges',
  ER_COLUMNACCESS_DENIED_ERROR: 'privileges',
  ER_SPECIFIC_ACCESS_DENIED_ERROR: 'privileges',
  ER_NO_SUCH_TABLE: 'schema',
  ER_BAD_FIELD_ERROR: 'schema',
  ER_CON_COUNT_ERROR: 'unreachable',
  ER_SERVER_SHUTDOWN: 'unreachable',
};
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
]);

/** The kind of an error the source or the driver raised, or undefined for anything else (a bug). */
export function sourceFault(error: unknown): SourceFault | undefined {
  if (error instanceof SourceSilent) return 'unreachable';
  const { code, message } = (error ?? {}) as { code?: string; message?: string };
  if (code && POSTGRES_FAULTS[code]) return POSTGRES_FAULTS[code];
  if (code && MYSQL_FAULTS[code]) return MYSQL_FAULTS[code];
  if (code && NETWORK_CODES.has(code)) return 'unreachable';
  // mysql2 marks an error of the connection itself (lost, closed, cut) as fatal.
  if ((error as { fatal?: boolean }).fatal === true) return 'unreachable';
  // node-postgres's own words for a connection that ended or timed out before the server answered.
  if (
    /Connection terminated|timeout expired|Query read timeout|Client has encountered a connection error/i.test(
      message ?? '',
    )
  ) {
    return 'unreachable';
  }
  return undefined;
}
