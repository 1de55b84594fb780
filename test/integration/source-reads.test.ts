import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseSourceUrl } from '../../shared/sync/source/url.ts';
import { connectSource, SOURCE_SILENCE_MS, type SourceConnection } from '../../shared/sync/source/connection.ts';
import { sourceFault } from '../../shared/sync/source/faults.ts';
import { startFaultProxy } from '../support/fault-proxy.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';

/**
 * The sync's reads of its source (shared/sync/source/), on real servers: a read never waits for
 * ever and never ends short. A connection cut or silent fails the call within the silence limit
 * (docs/contract.md, section 9), as unreachable, and closes; a reader's own error is never lost; the
 * silence limit counts the time spent waiting for the source, not the time the reader takes. The
 * limit is SOURCE_SILENCE_MS (10 s); the cases that wait it out give the connection a shorter one.
 */
const SILENCE_MS = 2_000;
describeSources("the source's reads", (engine) => {
  let db: SourceDatabase;
  beforeAll(async () => {
    db = await createSourceDatabase(engine);
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  /** `count` rows (at most a million), numbered from 0, built from a ten-row table joined to itself. */
  const numbers = (count: number) => {
    const digit = `(${Array.from({ length: 10 }, (_, d) => `SELECT ${d} AS d`).join(' UNION ALL ')})`;
    const tables = Array.from({ length: 6 }, (_, i) => `${digit} t${i}`).join(' CROSS JOIN ');
    const n = 't0.d + 10 * t1.d + 100 * t2.d + 1000 * t3.d + 10000 * t4.d + 100000 * t5.d';
    return `SELECT n FROM (SELECT ${n} AS n FROM ${tables}) q WHERE n < ${count}`;
  };
  const sleepFor = (seconds: number) =>
    engine === 'postgres' ? `SELECT pg_sleep(${seconds}) AS slept` : `SELECT SLEEP(${seconds}) AS slept`;

  async function withConnection<T>(
    url: string,
    work: (source: SourceConnection) => Promise<T>,
    silenceMs = SOURCE_SILENCE_MS,
  ): Promise<T> {
    const source = await connectSource(parseSourceUrl(url), silenceMs);
    try {
      return await work(source);
    } finally {
      await source.close(); // must not hang either
    }
  }

  it('reads in one snapshot at a time: a second begun while the first reads waits for it, and both read', async () => {
    // A pass its stream's failure left behind still reads its batch when the next pass begins
    // (shared/sync/run.ts): on one session, a second transaction inside the first fails (MySQL) or is
    // ended by its ROLLBACK (PostgreSQL).
    await withConnection(db.url, async (source) => {
      const order: string[] = [];
      let letFirstEnd = () => {};
      const held = new Promise<void>((resolve) => (letFirstEnd = resolve));
      const first = source.readConsistently(async () => {
        order.push('first begins');
        await held;
        const [row] = await source.query<{ n: number }>('SELECT 1 AS n');
        order.push('first ends');
        return row!.n;
      });
      await expect.poll(() => order).toEqual(['first begins']);
      const second = source.readConsistently(async () => {
        order.push('second begins');
        return 2;
      });
      letFirstEnd();
      expect(await Promise.all([first, second])).toEqual([1, 2]);
      expect(order).toEqual(['first begins', 'first ends', 'second begins']);
    });
  });

  it('ends a read whose connection is lost part-way with an error, not a wait for ever', async () => {
    const proxy = await startFaultProxy(`http://${new URL(db.url).host}`);
    try {
      const through = new URL(db.url);
      through.host = `127.0.0.1:${proxy.port}`;
      await withConnection(through.toString(), async (source) => {
        let rows = 0;
        // A million rows, more than the driver and the sockets hold: the read is under way when cut.
        const read = source.stream(numbers(1_000_000), [], async () => {
          if (++rows === 1) await proxy.set({ fault: 'refuse' });
        });
        const error = await read.then(
          () => new Error(`the read ended as if whole, after ${rows} rows`),
          (e: unknown) => e,
        );
        expect(sourceFault(error), String(error)).toBe('unreachable');
        // The connection is not trusted again: the next call fails at once, as unreachable.
        await expect(source.query('SELECT 1 AS one')).rejects.toSatisfy((e) => sourceFault(e) === 'unreachable');
      });
    } finally {
      await proxy.close();
    }
  }, 30_000);

  it('fails a read the source is silent on within the silence limit, and its transaction with it', async () => {
    await withConnection(
      db.url,
      async (source) => {
        const started = performance.now();
        const read = source.readConsistently(() => source.stream(sleepFor(120), [], () => {}));
        await expect(read).rejects.toSatisfy(
          (e) => sourceFault(e) === 'unreachable' && (e as Error).message === `no response for ${SILENCE_MS / 1000} s`,
        );
        // The silence limit, and not the time the server sleeps (nor a ROLLBACK queued behind it).
        expect(performance.now() - started).toBeLessThan(SILENCE_MS + 15_000);
      },
      SILENCE_MS,
    );
  }, 60_000);

  it('serves the next query on a connection whose read its reader stopped part-way (a DynamoDB failure)', async () => {
    await withConnection(db.url, async (source) => {
      let rows = 0;
      const read = source.stream(numbers(100_000), [], () => {
        if (++rows === 1_000) throw new Error('the reader stopped');
      });
      await expect(read).rejects.toThrow('the reader stopped');
      expect(await source.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    });
  }, 30_000);

  it("never ends a read as whole when the reader's work on its last row fails", async () => {
    await withConnection(db.url, async (source) => {
      for (const count of [1, 2, 5, 501]) {
        let rows = 0;
        const read = source.stream(numbers(count), [], async () => {
          if (++rows === count) throw new Error(`the last of ${count} rows failed`);
        });
        await expect(read).rejects.toThrow(`the last of ${count} rows failed`);
      }
    });
  }, 30_000);

  it('reads a result whose reader takes longer than the silence limit in all (the source answered at once)', async () => {
    await withConnection(
      db.url,
      async (source) => {
        const seen: number[] = [];
        // More rows than one batch of the PostgreSQL cursor: a second batch is asked for after the wait.
        await source.stream(numbers(1_200), [], async (row) => {
          if (seen.length === 0) await sleep(SILENCE_MS + 500);
          seen.push(Number(row.n));
        });
        expect(seen).toHaveLength(1_200);
      },
      SILENCE_MS,
    );
  }, 60_000);
});
