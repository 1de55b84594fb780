import fc from 'fast-check';
import { FUZZ_RUNS, FUZZ_SEED } from './fuzz.ts';

// Runs before every test file (vitest.config.ts setupFiles): every fc.assert, fc.check and
// fc.sample of the suite, including those that pass no parameters, draws from the suite's seed.
fc.configureGlobal({ seed: FUZZ_SEED, ...(FUZZ_RUNS === undefined ? {} : { numRuns: FUZZ_RUNS }) });
