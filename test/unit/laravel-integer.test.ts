import { execFileSync, spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { laravelInteger, parsePagination } from '../../shared/api/pagination.ts';
import { FUZZ_SEED, replayHint, runs } from '../support/fuzz.ts';

/**
 * Laravel's `integer` rule is PHP's `filter_var($value, FILTER_VALIDATE_INT)` (docs/contract.md,
 * section 4). The corpus holds PHP 8's answers, written in; where `php` is installed (Debian's
 * php-cli, which .ci/run installs) PHP itself answers the corpus and a fixed-seed sample of odd
 * strings again, and this API must agree with it on every one.
 */
const CORPUS: [value: string, php: bigint | false][] = [
  ['5', 5n],
  ['+5', 5n],
  ['-3', -3n],
  [' 5', 5n],
  ['5 ', 5n],
  ['\t5', 5n],
  ['\n5\n', 5n],
  ['\r5', 5n],
  ['\v5', 5n],
  ['\t\n\r\v 7 \v\r\n\t', 7n],
  [' +5 ', 5n],
  ['\f5', false],
  ['5\f', false],
  ['020', false],
  ['010', false],
  ['00', false],
  ['007', false],
  ['+050', false],
  ['0', 0n],
  ['+0', 0n],
  ['-0', 0n],
  ['-1', -1n],
  ['50', 50n],
  ['51', 51n],
  ['1e1', false],
  ['1.0', false],
  ['5.', false],
  ['0x1A', false],
  ['0b1', false],
  ['', false],
  [' ', false],
  ['+', false],
  ['-', false],
  ['+-5', false],
  ['+ 5', false],
  ['5 5', false],
  ['1 000', false],
  ['1,2', false],
  ['1_000', false],
  ['\u00a05', false],
  ['\uff15', false],
  ['\u0665', false],
  ['5\u0000', false],
  ['99999999999999999999', false],
  ['9223372036854775807', 9223372036854775807n],
  ['9223372036854775808', false],
  ['-9223372036854775808', -9223372036854775808n],
  ['-9223372036854775809', false],
];

const phpInstalled = spawnSync('php', ['--version']).status === 0;

/** PHP's `filter_var($v, FILTER_VALIDATE_INT)` for each value, in one run of `php`. */
function askPhp(values: string[]): (bigint | false)[] {
  const script =
    'foreach (json_decode(stream_get_contents(STDIN)) as $v) {' +
    ' $r = filter_var($v, FILTER_VALIDATE_INT); echo $r === false ? "false" : $r, "\\n"; }';
  const output = execFileSync('php', ['-r', script], { input: JSON.stringify(values), encoding: 'utf8' });
  return output
    .trimEnd()
    .split('\n')
    .map((line) => (line === 'false' ? false : BigInt(line)));
}

const ours = (value: string) => laravelInteger(value) ?? false;

describe("Laravel's integer rule (PHP's filter_var)", () => {
  it.each(CORPUS.map(([value, php]) => [JSON.stringify(value), value, php] as const))(
    'reads %s as PHP does',
    (_, value, php) => {
      expect(ours(value)).toBe(php);
    },
  );

  it.skipIf(!phpInstalled)('agrees with PHP itself on every value of the corpus', () => {
    const values = CORPUS.map(([value]) => value);
    const answers = askPhp(values);
    expect(answers).toEqual(CORPUS.map(([, php]) => php));
    expect(values.map(ours)).toEqual(answers);
  });

  it.skipIf(!phpInstalled)('agrees with PHP itself on a fixed-seed sample of odd strings', () => {
    const piece = fc.constantFrom(' ', '\t', '\n', '\r', '\v', '\f', '\u00a0', '+', '-', '0', '1', '9', 'e', '.', ',');
    const oddStrings = fc.oneof(
      fc.array(piece, { maxLength: 6 }).map((pieces) => pieces.join('')),
      fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map(String),
    );
    const values = fc.sample(oddStrings, { seed: FUZZ_SEED, numRuns: runs(2_000) });
    const answers = askPhp(values);
    const disagreement = values.findIndex((value, i) => ours(value) !== answers[i]);
    if (disagreement >= 0) {
      const value = values[disagreement]!;
      throw new Error(
        `${replayHint('test/unit/laravel-integer.test.ts')}: PHP reads ${JSON.stringify(value)} as ` +
          `${answers[disagreement]}, this API as ${ours(value)}`,
      );
    }
    console.log(`${values.length} odd strings agree with PHP; ${replayHint('test/unit/laravel-integer.test.ts')}`);
  });

  it.each([
    ['+5', { page: 1, perPage: 5, perPageGiven: true }],
    [' 5', { page: 1, perPage: 5, perPageGiven: true }],
  ])('takes per_page=%j as the integer read', (perPage, value) => {
    expect(parsePagination({ per_page: perPage })).toEqual({ ok: true, value });
  });

  it.each([
    ['-3', 'The per page field must be at least 1.'],
    ['-0', 'The per page field must be at least 1.'],
    ['020', 'The per page field must be an integer.'],
    ['99999999999999999999', 'The per page field must be an integer.'],
    ['9223372036854775807', 'The per page field must not be greater than 50.'],
  ])('answers per_page=%j with "%s"', (perPage, message) => {
    expect(parsePagination({ per_page: perPage })).toEqual({ ok: false, errors: { per_page: [message] } });
  });
});
