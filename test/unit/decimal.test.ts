import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatAmount, jsonNumber, parseAmount, WrittenNumber } from '../../shared/domain/decimal.ts';

/** The units of an amount that must parse, or a failed test naming the input. */
function units(input: unknown): bigint {
  const parsed = parseAmount(input);
  if (!parsed.ok) throw new Error(`expected ${String(input)} to parse, got "${parsed.problem}"`);
  return parsed.units;
}

function problem(input: unknown): string {
  const parsed = parseAmount(input);
  if (parsed.ok) throw new Error(`expected ${String(input)} to be rejected, got ${parsed.units} units`);
  return parsed.problem;
}

describe('parseAmount', () => {
  it.each([
    ['reads a decimal string as ten-thousandths', '24.15', 241_500n],
    ['reads a whole decimal string', '5', 50_000n],
    ['reads a JSON number', 24.15, 241_500n],
    ['reads zero', 0, 0n],
    ['accepts exactly 4 decimals', '0.0001', 1n],
    ['accepts trailing zeros beyond the value, as long as there are at most 4 decimals', '5.0000', 50_000n],
    ['ignores white space around a string', ' 5.00 ', 50_000n],
    ['keeps amounts beyond 2^53 exact', '123456789012345678.1234', 1_234_567_890_123_456_781_234n],
  ])('%s', (_behaviour, input, expected) => {
    expect(units(input)).toBe(expected);
  });

  it.each([
    ['rejects more than 4 decimals in a string with "has more than 4 decimals"', '1.23456', 'has more than 4 decimals'],
    ['rejects more than 4 decimals in a number with "has more than 4 decimals"', 1.23456, 'has more than 4 decimals'],
    ['rejects a negative string with "must not be negative"', '-5.00', 'must not be negative'],
    ['rejects a negative number with "must not be negative"', -0.01, 'must not be negative'],
  ])('%s', (_behaviour, input, expected) => {
    expect(problem(input)).toBe(expected);
  });

  it.each(['', 'abc', '1,5', '1.2.3', '1e3', '0x10', '+5', '.5', '5.', 'NaN'])(
    'rejects the string %j as not a decimal number',
    (text) => {
      expect(problem(text)).toBe('is not a decimal number');
    },
  );

  it.each([Number.NaN, Number.POSITIVE_INFINITY])('rejects the number %s as not a decimal number', (n) => {
    expect(problem(n)).toBe('is not a decimal number');
  });

  it.each([null, undefined, true, {}, [], 5n])('rejects %s, which is neither a string nor a number', (input) => {
    expect(problem(input)).toBe('must be a decimal string or a number');
  });

  it('reads the string and the number of the same amount alike', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000_000 }), fc.integer({ min: 0, max: 9999 }), (whole, fraction) => {
        const text = `${whole}.${String(fraction).padStart(4, '0')}`;
        expect(units(Number(text))).toBe(units(text));
      }),
    );
  });
});

describe('formatAmount', () => {
  it.each([
    ['writes a whole amount without a fraction', 50_000n, '5'],
    ['drops trailing zeros of the fraction', 533_000n, '53.3'],
    ['writes zero as 0', 0n, '0'],
    ['writes the smallest unit as 0.0001', 1n, '0.0001'],
    ['writes a negative amount with a leading minus', -12_500n, '-1.25'],
  ])('%s', (_behaviour, input, expected) => {
    expect(formatAmount(input)).toBe(expected);
  });

  it('makes 0.1 + 0.2 exactly 0.3', () => {
    expect(formatAmount(units('0.1') + units('0.2'))).toBe('0.3');
  });

  it('writes a valid JSON number', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 12n }), (n) => {
        expect(() => JSON.parse(formatAmount(n))).not.toThrow();
        expect(typeof JSON.parse(formatAmount(n))).toBe('number');
      }),
    );
  });

  it('round-trips through parseAmount', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 24n }), (n) => {
        expect(units(formatAmount(n))).toBe(n);
      }),
    );
  });

  it('formats the sum of parsed amounts as the integer-arithmetic sum', () => {
    // Each amount as (whole, ten-thousandths); the expected sum is computed on integers alone.
    const amount = fc.record({
      whole: fc.integer({ min: 0, max: 1_000_000 }),
      fraction: fc.integer({ min: 0, max: 9999 }),
    });
    fc.assert(
      fc.property(fc.array(amount, { maxLength: 30 }), (amounts) => {
        const texts = amounts.map(({ whole, fraction }) => `${whole}.${String(fraction).padStart(4, '0')}`);
        const sum = texts.reduce((acc, text) => acc + units(text), 0n);
        const wholeSum = amounts.reduce((acc, a) => acc + a.whole, 0);
        const fractionSum = amounts.reduce((acc, a) => acc + a.fraction, 0);
        const totalWhole = wholeSum + Math.floor(fractionSum / 10_000);
        const totalFraction = String(fractionSum % 10_000)
          .padStart(4, '0')
          .replace(/0+$/, '');
        expect(formatAmount(sum)).toBe(totalFraction ? `${totalWhole}.${totalFraction}` : `${totalWhole}`);
      }),
    );
  });
});

describe('numbers judged as written (docs/contract.md, section 7)', () => {
  it.each([
    [jsonNumber('5.00000000000000001'), { ok: false, problem: 'has more than 4 decimals' }],
    [jsonNumber('-0'), { ok: true, units: 0n }],
    ['-0', { ok: true, units: 0n }],
    ['-0.00', { ok: true, units: 0n }],
    [jsonNumber('1e15'), { ok: true, units: 10n ** 19n }],
    [jsonNumber('1.5e-3'), { ok: true, units: 15n }],
    [jsonNumber('1e-5'), { ok: false, problem: 'has more than 4 decimals' }],
    [jsonNumber('900719925474.0991'), { ok: true, units: 9007199254740991n }],
  ])('reads %s as %o', (amount, parsed) => {
    expect(parseAmount(amount)).toEqual(parsed);
  });

  it('takes a large amount as a decimal string, exactly', () => {
    expect(parseAmount('1000000000000000000000.1234')).toEqual({ ok: true, units: 10000000000000000000001234n });
  });

  it.each([['800.0000000000000001'], ['9007199254740993'], ['5.00000000000000001']])(
    'keeps %s as written, not as a double',
    (text) => {
      expect(String(jsonNumber(text))).toBe(text);
      expect(jsonNumber(text)).toBeInstanceOf(WrittenNumber);
    },
  );

  it.each([
    ['1.0', 1],
    ['1e2', 100],
    ['24.15', 24.15],
    ['-0', -0],
  ])('reads %s as the number %d, which holds it exactly', (text, value) => {
    expect(jsonNumber(text)).toBe(value);
  });
});
