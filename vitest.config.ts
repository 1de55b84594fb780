import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One DynamoDB Local for the whole run; each test file makes its own table.
    globalSetup: ['test/support/global-setup.ts'],
    // Every fast-check run draws from the suite's seed (FUZZ_SEED; test/support/fuzz.ts).
    setupFiles: ['test/support/fuzz-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
