import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import Cursor from 'pg-cursor';
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

/**
 * How long a snapshot's read waits for a lock a migration holds, and how often it begins again before
 * it waits as long as it takes (readConsistently); the codes it begins again on.
 */
const LOCK_TIMEOUT_MS = 100;
const LOCK_TRIES = 5;
const LOCK_NOT_AVAILABLE = '55P03';
const DEADLOCK_DETECTED = '40P01';

/** A PostgreSQL session as the sync reads it: UTC, exact numbers, times as text. */
export async function connect(source: SourceUrl, silenceMs = SOURCE_SILENCE_MS): Promise<SourceConnection> {
  const client = new pg.Client({
    connectionString: source.url,
    connectionTimeoutMillis: silenceMs,
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
  const bounded = <T>(call: Promise<T>) =>
    withinSilence(call, silenceMs).catch((error) => {
      breaks(error);
      throw error;
    });
  const ask = async (sql: string, params: unknown[] = []) => {
    if (broken) throw new SourceSilent(silenceMs);
    return bounded(client.query(toPostgresParameters(sql), params));
  };
  try {
    await client.connect();
    await ask("SET TIME ZONE 'UTC'");
  } catch (error) {
    await withinSilence(client.end(), silenceMs).catch(() => {});
    throw error;
  }
  return {
    engine: 'postgres',
    query: async <T extends Row>(sql: string, params: unknown[] = []) => (await ask(sql, params)).rows as T[],
    async stream(sql, params, onRow) {
      if (broken) throw new SourceSilent(silenceMs);
      const cursor = client.query(new Cursor(toPostgresParameters(sql), params));
      try {
        for (;;) {
          const rows = await bounded(cursor.read(STREAM_BATCH));
          for (const row of rows) await onRow(row);
          if (rows.length < STREAM_BATCH) break;
        }
      } finally {
        // pg-cursor's close waits for a ReadyForQuery: on a broken connection it would wait for ever.
        if (!broken) await withinSilence(cursor.close(), silenceMs).catch(breaks);
      }
    },
    async attempt(work) {
      await ask('SAVEPOINT attempt');
      try {
        const result = await work();
        await ask('RELEASE SAVEPOINT attempt');
        return result;
      } catch (error) {
        await ask('ROLLBACK TO SAVEPOINT attempt').catch(() => {});
        throw error;
      }
    },
    async readConsistently(work) {
      for (let attempt = 1; ; attempt++) {
        await ask('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        try {
          // The snapshot holds a share lock on every table it read until it ends: one that then waits
          // for a migration's lock (DROP TABLE a, b holds a and waits for b) closes a cycle, which
          // PostgreSQL breaks by failing one side, perhaps the migration. So the first tries give up
          // on such a lock at once and begin again; the last waits, as a plain read does.
          if (attempt < LOCK_TRIES) await ask(`SET LOCAL lock_timeout = ${LOCK_TIMEOUT_MS}`);
          return await work();
        } catch (error) {
          const code = (error as { code?: string }).code;
          if (!(code === LOCK_NOT_AVAILABLE || code === DEADLOCK_DETECTED) || attempt >= LOCK_TRIES) throw error;
        } finally {
          await ask('ROLLBACK').catch(() => {});
        }
        await sleep(LOCK_TIMEOUT_MS * attempt);
      }
    },
    // With a call still under way, node-postgres's end() destroys the socket rather than wait.
    close: () => withinSilence(client.end(), silenceMs).catch(() => {}),
  };
}
