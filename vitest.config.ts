import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import SlowFoldersFirst from './test/support/sequencer.ts';

// Node's compile cache for every process the run starts (test workers, and the commands the tests
// run, which pass it on where they build a process's environment from nothing): the suite starts a
// hundred or so node processes that would otherwise each compile the same modules again.
process.env.NODE_COMPILE_CACHE ??= fileURLToPath(new URL('node_modules/.cache/node-compile-cache', import.meta.url));

/**
 * Four projects (docs/testing.md): `unit` and `infra` need no Java and no database, and run alone
 * with `npm run test:unit` (`npm run test:infra`); `integration` (test/integration and
 * test/robustness) runs against one DynamoDB Local, one PostgreSQL and one MariaDB that its global
 * setup starts for the whole run. `npm test` runs these three. `at-size` holds the tests whose point
 * is size or load: the writes through the limiter at DynamoDB's real pace, lists of 100,000 items and
 * throttled keys (minutes each, and timed against the contract's 10 s), transactions of 10,000 rows
 * and more, a full pass made long, first loads of 1,000 tokens, sixteen writers at full speed. Their
 * cost is their size, and a load beside them would bend what they time: `npm run test:at-size` runs
 * its files one at a time, and CI after.
 */
const AT_SIZE = [
  'test/integration/sync-at-size.test.ts',
  'test/integration/import-at-size.test.ts',
  'test/integration/compaction.test.ts',
  'test/integration/throttled-writers.test.ts',
  'test/integration/sync-big-transaction.test.ts',
  'test/integration/sync-transactions-at-scale.test.ts',
  'test/integration/sync-long-pass.test.ts',
  'test/integration/sync-keeps-up.test.ts',
  'test/integration/first-load.test.ts',
  'test/integration/sync-mass-delete.test.ts',
  'test/integration/import-huge-values.test.ts',
  'test/integration/import-streamed.test.ts',
  'test/integration/read-cost-at-size.test.ts',
  'test/integration/local-burst.test.ts',
  'test/integration/sync-stopped-anywhere.test.ts',
];
const integration = {
  // One DynamoDB Local and one server of each source engine for the whole run; each test file makes
  // its own table and databases in them.
  globalSetup: ['test/support/global-setup.ts'],
};
export default defineConfig({
  test: {
    // Every fast-check run draws from the suite's seed (FUZZ_SEED; test/support/fuzz.ts).
    setupFiles: ['test/support/fuzz-setup.ts'],
    // Hang detectors, not speed checks: generous, for a 2-core machine other work is also using.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Files in parallel, each in its own process. Vitest's default on 2 cores is one worker; much
    // of a file's time is spent waiting (on DynamoDB Local, the source databases, child processes),
    // so three keep both cores busy (`npm test -- --maxWorkers=1` runs one file at a time).
    maxWorkers: 3,
    // A concurrent describe runs all its cases at once (vitest's default is 5).
    maxConcurrency: 12,
    // Slow folders first in a fresh clone, where vitest has no durations to order by yet.
    sequence: { sequencer: SlowFoldersFirst },
    projects: [
      // `unit` and `infra` files share their worker processes (isolate: false): each file in a fresh
      // fork loaded vitest and its module graph (aws-cdk-lib for every infra file) again, which cost
      // more CPU than their tests (unit 17.8 CPU-s alone, 10.1 shared; infra 60.2, 42.9). They start
      // no server and keep no state between files: a file that sets process.env puts it back.
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false } },
      { extends: true, test: { name: 'infra', include: ['test/infra/**/*.test.ts'], isolate: false } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/robustness/**/*.test.ts'],
          exclude: AT_SIZE,
          ...integration,
        },
      },
      { extends: true, test: { name: 'at-size', include: AT_SIZE, ...integration } },
    ],
  },
});
