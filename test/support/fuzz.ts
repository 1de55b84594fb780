import type fc from 'fast-check';

/**
 * The one source of randomness of the test suite. Every property and fuzz test draws from
 * fast-check with this seed: fixed by default, so every run on every machine draws the same
 * cases; `FUZZ_SEED=<n>` draws others, and replays exactly the run that printed `seed: <n>`.
 *
 * - `FUZZ_SEED`: the seed (an integer, as fast-check prints it; default DEFAULT_FUZZ_SEED).
 * - `FUZZ_RUNS`: runs of every property instead of each one's own default (search harder).
 * - `FUZZ_REQUESTS`: requests of the HTTP fuzz test instead of its default.
 *
 * Nothing in test/ may call Math.random or take a seed from the clock (test/unit/fuzz.test.ts checks).
 */
export const DEFAULT_FUZZ_SEED = 20_260_611;

/** An integer setting from the environment, undefined when unset; anything else is an error that names it. */
export function readInteger(
  name: string,
  min: number,
  max: number,
  env: NodeJS.ProcessEnv = process.env,
): number | undefined {
  const text = env[name]?.trim();
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  if (!/^-?[0-9]+$/.test(text) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(text)}`);
  }
  return value;
}

const seedFromEnvironment = readInteger('FUZZ_SEED', -(2 ** 31), 2 ** 31 - 1);
export const FUZZ_SEED = seedFromEnvironment ?? DEFAULT_FUZZ_SEED;
export const FUZZ_RUNS = readInteger('FUZZ_RUNS', 1, 1_000_000);
export const FUZZ_REQUESTS = readInteger('FUZZ_REQUESTS', 1, 10_000_000);

/** How the seed was chosen, for the lines a test prints. */
export const seedDescription =
  seedFromEnvironment === undefined
    ? `seed ${FUZZ_SEED} (the default; FUZZ_SEED=<n> draws others)`
    : `seed ${FUZZ_SEED} (from FUZZ_SEED)`;

/** A property's number of runs: its own default, or FUZZ_RUNS. */
export function runs(defaultRuns: number): number {
  return FUZZ_RUNS ?? defaultRuns;
}

/**
 * Parameters for fc.assert: the suite's seed and the property's runs. Shrinking stays on, so a
 * failure reports the seed, the path and the smallest counterexample found; a property whose runs
 * are slow caps its shrinking with fc.limitShrink on its arbitrary (a count, not a clock, so a
 * replay shrinks the same way).
 */
export function propertyParameters<T>(defaultRuns: number, extra: fc.Parameters<T> = {}): fc.Parameters<T> {
  return { seed: FUZZ_SEED, numRuns: runs(defaultRuns), ...extra };
}

/** A test's time limit, grown in proportion when FUZZ_RUNS (or FUZZ_REQUESTS) asks for more than its default. */
export function timeLimit(baseMs: number, defaultCount: number, count: number): number {
  return Math.ceil(baseMs * Math.max(1, count / defaultCount));
}

/** The line a property or fuzz test prints when it passes, so the run can be replayed too. */
export function replayHint(file: string): string {
  return `${seedDescription}; replay: FUZZ_SEED=${FUZZ_SEED} npm test -- ${file}`;
}
