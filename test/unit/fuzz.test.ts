import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_FUZZ_SEED, FUZZ_SEED, readInteger } from '../support/fuzz.ts';
import { ROOT } from '../support/import-process.ts';

/**
 * The suite's randomness: every fast-check run draws from one seed (FUZZ_SEED, fixed by default),
 * so any run can be replayed, and nothing else in test/ draws at random or from the clock.
 */
describe("the suite's seed", () => {
  it('is the seed of every fast-check run, including runs that pass no parameters', () => {
    expect(fc.readConfigureGlobal().seed).toBe(FUZZ_SEED);
  });

  // The literal, not the expression the code uses: a seed made time-derived (or drawn) fails here.
  it('is 20260611 unless FUZZ_SEED is set', () => {
    expect(DEFAULT_FUZZ_SEED).toBe(20_260_611);
    expect(FUZZ_SEED).toBe(process.env.FUZZ_SEED === undefined ? 20_260_611 : Number(process.env.FUZZ_SEED.trim()));
  });

  it('draws the same values on every run', () => {
    const arbitrary = fc.tuple(fc.string(), fc.bigInt(), fc.array(fc.nat()));
    expect(fc.sample(arbitrary, 20)).toEqual(fc.sample(arbitrary, 20));
  });

  it('reads a negative seed, as fast-check may print one', () => {
    expect(readInteger('FUZZ_SEED', -(2 ** 31), 2 ** 31 - 1, { FUZZ_SEED: ' -1907542339 ' })).toBe(-1_907_542_339);
  });

  it.each(['abc', '1.5', '1e3', '99999999999'])('refuses FUZZ_SEED=%s, naming the variable', (text) => {
    expect(() => readInteger('FUZZ_SEED', -(2 ** 31), 2 ** 31 - 1, { FUZZ_SEED: text })).toThrow(
      /^FUZZ_SEED must be an integer from -2147483648 to 2147483647/,
    );
  });
});

describe('randomness in test/', () => {
  // Built from parts, so that this file does not match itself.
  const forbidden = new RegExp(['Math\\.random\\(', 'Date\\.now\\(\\)\\s*%', 'seed:\\s*Date\\.now'].join('|'));

  it('has no call of Math.random and no seed taken from the clock', () => {
    const dir = join(ROOT, 'test');
    const offenders = readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts'))
      .flatMap((file) =>
        readFileSync(join(dir, file), 'utf8')
          .split('\n')
          .map((line, i) => ({ file, line, number: i + 1 })),
      )
      .filter(({ line }) => forbidden.test(line))
      .map(({ file, number, line }) => `${relative(ROOT, join(dir, file))}:${number}: ${line.trim()}`);
    expect(offenders).toEqual([]);
  });
});
