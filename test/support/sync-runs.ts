import { afterAll, afterEach, beforeAll } from 'vitest';
import type { TestTable } from './dynamodb.ts';
import { createSourceDatabase, type SourceDatabase } from './source-databases.ts';
import { seedSource, type SourceSnapshot } from './source-seed.ts';
import type { SourceEngine } from './source-servers.ts';
import { type RunningSync, setUp, startSync } from './sync.ts';

/**
 * The set-up of a file whose cases run the sync more than once over one source (a run ended, the next
 * taking over from its position): `data` seeded into a source of `engine` and set up before the cases;
 * every run a case starts stopped after it; what they all said, for a failure's message.
 */
export function syncRuns(engine: SourceEngine, data: () => SourceSnapshot) {
  const runs: RunningSync[] = [];
  let db: SourceDatabase | undefined;
  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, data());
    await setUp(db);
  }, 60_000);
  afterEach(async () => {
    for (const run of runs.splice(0)) await run.stop();
  });
  afterAll(async () => {
    await db?.drop();
  });
  return {
    get db(): SourceDatabase {
      return db!;
    },
    start(table: TestTable, settings?: Parameters<typeof startSync>[2]): RunningSync {
      const run = startSync(db!, table, settings);
      runs.push(run);
      return run;
    },
    said: () => `the syncs said: ${JSON.stringify(runs.map((run) => run.lines))}`,
  };
}
