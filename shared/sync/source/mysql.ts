import type { Readable } from 'node:stream';
import mysql from 'mysql2';
import {
  type Row,
  SOURCE_SILENCE_MS,
  SourceSilent,
  STREAM_BATCH,
  type SourceConnection,
  withinSilence,
} from './connection.ts';
import { sourceFault } from './faults.ts';
import type { SourceUrl } from './url.ts';

/** How often a snapshot is taken again when a migration changed a table it reads (ER_TABLE_DEF_CHANGED). */
const TABLE_CHANGED_TRIES = 5;

/**
 * mysql2's options for exact values: BIGINT and DECIMAL as strings (DECIMAL is a string unless
 * decimalNumbers is set); times as the text the column holds (TIMESTAMP in UTC).
 */
export const EXACT_VALUES = { supportBigNumbers: true, bigNumberStrings: true, dateStrings: true, timezone: 'Z' };

/** A MySQL/MariaDB session as the sync reads it: UTC, exact numbers, times as text. */
export async function connect(source: SourceUrl, silenceMs = SOURCE_SILENCE_MS): Promise<SourceConnection> {
  const connection = mysql.createConnection({
    uri: source.url.replace(/^mariadb:/, 'mysql:'),
    connectTimeout: silenceMs,
    ...EXACT_VALUES,
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
    if (broken) throw new SourceSilent(silenceMs);
    try {
      const [rows] = await withinSilence(promise.query({ sql, timeout: silenceMs }, params), silenceMs);
      return rows;
    } catch (error) {
      breaks(error);
      throw error;
    }
  };
  /** Ends the connection; a broken one is cut (its socket destroyed: a QUIT would wait behind the call). */
  const close = async () => {
    if (!broken) await withinSilence(promise.end(), silenceMs).catch(() => {});
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
      if (broken) return Promise.reject(new SourceSilent(silenceMs));
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
          silence = setTimeout(() => settle(new SourceSilent(silenceMs)), silenceMs).unref();
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
    attempt: (work) => work(),
    async readConsistently(work) {
      for (let attempt = 1; ; attempt++) {
        await ask('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
        await ask('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY');
        try {
          return await work();
        } catch (error) {
          // A table made or altered by a migration after the snapshot began cannot be read in it
          // (ER_TABLE_DEF_CHANGED, "please retry transaction"): a snapshot taken now can. A snapshot
          // chosen to break a deadlock with a migration's metadata lock (ER_LOCK_DEADLOCK) begins again.
          const code = (error as { code?: string }).code;
          if (!(code === 'ER_TABLE_DEF_CHANGED' || code === 'ER_LOCK_DEADLOCK') || attempt === TABLE_CHANGED_TRIES)
            throw error;
        } finally {
          await ask('ROLLBACK').catch(() => {});
        }
      }
    },
    close,
  };
}
