import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import SlowFoldersFirst from './test/support/sequencer.ts';

// Node's compile cache for every process the run starts (test workers, and the commands the tests
// run, which pass it on where they build a process's environment from nothing): the suite starts a
// hundred or so node processes that would otherwise each compile the same modules again.
process.env.NODE_COMPILE_CACHE ??= fileURLToPath(new URL('node_modules/.cache/node-compile-cache', import.meta.url));

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One DynamoDB Local for the whole run; each test file makes its own table.
    globalSetup: ['test/support/global-setup.ts'],
    // Every fast-check run draws from the suite's seed (FUZZ_SEED; test/support/fuzz.ts).
    setupFiles: ['test/support/fuzz-setup.ts'],
    // Hang detectors, not speed checks: generous, for a 2-core machine other work is also using.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Files in parallel, each in its own process. Vitest's default on 2 cores is one worker; much
    // of a file's time is spent waiting (on DynamoDB Local, child processes, timeouts under fault),
    // so three keep both cores busy (`npm test -- --maxWorkers=1` runs one file at a time).
    maxWorkers: 3,
    // A concurrent describe runs all its cases at once (vitest's default is 5): the 10-second
    // silence cases of command-no-response.test.ts wait side by side instead of in two rounds.
    maxConcurrency: 12,
    // Slow folders first in a fresh clone, where vitest has no durations to order by yet.
    sequence: { sequencer: SlowFoldersFirst },
  },
});
