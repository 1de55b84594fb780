import type { Row } from '../source/connection.ts';
import { type LoggedRow, LogPositionLost } from './change-source.ts';

/**
 * The binlog as the MySQL/MariaDB reader (mysql.ts, mysql-stream.ts) speaks of it: its files and
 * positions (a position is `<binlog file>:<offset>`, the offset just after an event: a transaction's
 * commit, for the sync), the values of its rows, and what its errors mean to the sync.
 */
export interface BinlogPosition {
  file: string;
  offset: number;
}

export type Query = <T extends Row>(sql: string) => Promise<T[]>;

/**
 * The binlog's end: SHOW MASTER STATUS, SHOW BINARY LOG STATUS from MySQL 8.2 (the old name is gone
 * in 8.4: https://dev.mysql.com/doc/refman/8.4/en/show-binary-log-status.html); MariaDB keeps the old
 * name beside SHOW BINLOG STATUS (https://mariadb.com/kb/en/show-binlog-status/). REPLICATION CLIENT.
 */
export async function binlogStatus(query: Query): Promise<BinlogPosition> {
  let rows: Row[];
  try {
    rows = await query('SHOW MASTER STATUS');
  } catch (error) {
    if ((error as { code?: string }).code !== 'ER_PARSE_ERROR') throw error;
    rows = await query('SHOW BINARY LOG STATUS');
  }
  const [row] = rows;
  if (!row?.File) throw new Error('binary logging is off on the source (SHOW MASTER STATUS names no binlog file)');
  return { file: String(row.File), offset: Number(row.Position) };
}

/**
 * Every binlog file the server keeps, oldest first, with its size: SHOW BINARY LOGS, which needs
 * REPLICATION CLIENT (https://dev.mysql.com/doc/refman/8.0/en/show-binary-logs.html; MariaDB's
 * BINLOG MONITOR, which REPLICATION CLIENT is another name for: https://mariadb.com/kb/en/show-binary-logs/).
 */
export async function binaryLogs(query: Query): Promise<{ name: string; size: number }[]> {
  const rows = await query<{ Log_name: string; File_size: string | number }>('SHOW BINARY LOGS');
  return rows.map((row) => ({ name: String(row.Log_name), size: Number(row.File_size) }));
}

export const formatPosition = ({ file, offset }: BinlogPosition) => `${file}:${offset}`;

export function parsePosition(position: string): BinlogPosition {
  const colon = position.lastIndexOf(':');
  const offset = Number(position.slice(colon + 1));
  if (colon <= 0 || !Number.isSafeInteger(offset) || offset < 4) {
    throw new Error(`not a binlog position: ${JSON.stringify(position)} (expected <file>:<offset>)`);
  }
  return { file: position.slice(0, colon), offset };
}

/** Binlog files are numbered base.000001, base.000002…: by number, then (another base) by name. */
export function compareLogNames(a: string, b: string): number {
  const number = (name: string) => Number(/\.(\d+)$/.exec(name)?.[1] ?? Number.NaN);
  const [x, y] = [number(a), number(b)];
  if (!Number.isNaN(x) && !Number.isNaN(y) && a.replace(/\d+$/, '') === b.replace(/\d+$/, '')) return x - y;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Negative when `a` is earlier in the binlog than `b`. */
export const comparePositions = (a: BinlogPosition, b: BinlogPosition) =>
  compareLogNames(a.file, b.file) || a.offset - b.offset;

/** The later of two positions, either of which may be missing. */
export function later(a: BinlogPosition | undefined, b: BinlogPosition | undefined): BinlogPosition | undefined {
  if (!a || !b) return a ?? b;
  return comparePositions(a, b) >= 0 ? a : b;
}

/** A row as the log gives it: each value as exact text (see change-source.ts), SQL NULL as null. */
export function logged(row: Record<string, unknown>): LoggedRow {
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
export function classify(error: Error & { errno?: number; code?: string }, from: string): Error {
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
export function connectionLost(message: string, cause?: Error): Error {
  return Object.assign(new Error(message, { cause }), { code: 'PROTOCOL_CONNECTION_LOST', fatal: true });
}
