import type { SourceEngine, SourceUrl } from './url.ts';

/**
 * The source database, PostgreSQL or MySQL/MariaDB, through maintained drivers (node-postgres with
 * pg-cursor: postgres.ts; mysql2: mysql.ts), behind the few calls the sync makes to read it: a query,
 * a stream of rows read a batch at a time (never a whole table in memory), and a read-only
 * repeatable-read transaction. Both engines hand rows back alike: ids and decimals as exact strings,
 * times as the text the column holds, in UTC for columns that carry a zone. What the sync reads of the
 * log goes through another connection (shared/sync/log/).
 *
 * SQL is written with `?` parameters; for PostgreSQL they become `$1`, `$2`…
 */
export type Row = Record<string, unknown>;

/** How long a source may stay silent before a call is abandoned (docs/contract.md, sections 8 and 9). */
export const SOURCE_SILENCE_MS = 10_000;

/** A connection to the source: one session, used by one caller at a time. */
export interface SourceConnection {
  readonly engine: SourceEngine;
  query<T extends Row = Row>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Every row of the query, a batch at a time, in order; `onRow` may wait (the read waits for it). */
  stream(sql: string, params: unknown[], onRow: (row: Row) => void | Promise<void>): Promise<void>;
  /** `work` in a read-only transaction at REPEATABLE READ: every read in it sees one state of the source. */
  readConsistently<T>(work: () => Promise<T>): Promise<T>;
  /**
   * `work` inside such a transaction, undone alone if it fails (a query of a column a migration took
   * away), so the transaction's other reads go on: a savepoint on PostgreSQL, where a failed statement
   * aborts the transaction; nothing on MySQL, where it does not.
   */
  attempt<T>(work: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export const STREAM_BATCH = 500;

/**
 * Connects, and sets the session up as the sync reads it (UTC, exact numbers). `silenceMs`: how long
 * the source may stay silent, SOURCE_SILENCE_MS unless a test gives a shorter one.
 */
export async function connectSource(source: SourceUrl, silenceMs = SOURCE_SILENCE_MS): Promise<SourceConnection> {
  const engine = source.engine === 'postgres' ? await import('./postgres.ts') : await import('./mysql.ts');
  const connection = await engine.connect(source, silenceMs);
  // One snapshot at a time on the session. A pass that its stream's failure left behind finishes the
  // batch it is reading while the next session's pass begins (shared/sync/run.ts), and a transaction
  // begun inside another fails on MySQL ("Transaction characteristics can't be changed while a
  // transaction is in progress") and, on PostgreSQL, ends with the other's ROLLBACK, its reads then in
  // no snapshot at all.
  let last: Promise<unknown> = Promise.resolve();
  return {
    ...connection,
    readConsistently<T>(work: () => Promise<T>): Promise<T> {
      const next = last.then(() => connection.readConsistently(work));
      last = next.catch(() => {});
      return next;
    },
  };
}

/** A call that has waited past the silence limit is abandoned: its connection is then not trusted again. */
export async function withinSilence<T>(call: Promise<T>, silenceMs = SOURCE_SILENCE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const silence = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SourceSilent(silenceMs)), silenceMs).unref();
  });
  try {
    return await Promise.race([call, silence]);
  } finally {
    clearTimeout(timer);
  }
}

/** The source sent nothing for the silence limit (SOURCE_SILENCE_MS unless told another). */
export class SourceSilent extends Error {
  constructor(silenceMs = SOURCE_SILENCE_MS) {
    super(`no response for ${silenceMs / 1000} s`);
    this.name = 'SourceSilent';
  }
}
