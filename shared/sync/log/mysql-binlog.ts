import type { Row } from '../source.ts';

/**
 * The binlog's files and positions, as the MySQL/MariaDB reader (mysql.ts) names them: a position is
 * `<binlog file>:<offset>`, the offset just after an event (a transaction's commit, for the sync).
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
