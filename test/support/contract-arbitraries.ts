import fc from 'fast-check';
import { unitsToText } from './finance-model.ts';

/**
 * Generators of snapshot values that docs/contract.md, section 7 calls valid, and nothing else: a property
 * test that draws an invalid value by accident fails on the importer's rules instead of the
 * behaviour it is about, at random. (Tests of invalid values name them and assert their message.)
 */

// ---- strings ----------------------------------------------------------------------------------

/** Any code point a snapshot string may hold: not a control character (U+0000-U+001F, U+007F-U+009F), not a surrogate. */
const codePoint = (min: number, max: number) => fc.integer({ min, max }).map((cp) => String.fromCodePoint(cp));
const printableAscii = codePoint(0x20, 0x7e);
const bmpBeyondControls = fc.oneof(codePoint(0xa0, 0xd7ff), codePoint(0xe000, 0xffff));
const astral = codePoint(0x1_0000, 0x10_ffff);

/** One character of a contract string: mostly ASCII, often other BMP characters, sometimes astral ones. */
export const contractCharacter = fc.oneof(
  { weight: 4, arbitrary: printableAscii },
  { weight: 3, arbitrary: bmpBeyondControls },
  { weight: 1, arbitrary: astral },
);

/** True when a string follows the contract's string rules, with its length in code points. */
export function isContractString(text: string, minLength: number, maxLength: number): boolean {
  const length = [...text].length;
  return (
    text.isWellFormed() && !/[\u0000-\u001f\u007f-\u009f]/.test(text) && length >= minLength && length <= maxLength
  );
}

/**
 * A name, label, username or project slug (1 to 255 code points). Mostly short, often printable
 * Unicode graphemes as people write them, sometimes exactly 255 characters long, astral ones
 * included (up to 510 UTF-16 units: lengths count code points).
 */
export const contractName = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: contractCharacter, minLength: 1, maxLength: 12 }) },
  {
    weight: 3,
    arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }).filter((s) => isContractString(s, 1, 255)),
  },
  { weight: 1, arbitrary: fc.string({ unit: contractCharacter, minLength: 255, maxLength: 255 }) },
);

// ---- money ------------------------------------------------------------------------------------

/** Amounts and every total stay below 100,000,000,000, at most 4 decimals: in 1/10,000ths, below 10^15. */
export const AMOUNT_LIMIT_UNITS = 10n ** 15n;

/** How a snapshot may write an amount: canonical decimal text, text padded to 4 decimals, or a JSON number. */
export type AmountForm = 'canonical' | 'padded' | 'number';
export const amountForm = fc.constantFrom<AmountForm>('canonical', 'padded', 'number');

/**
 * An amount written in one of those forms. Below 10^11 with at most 4 decimals an amount has at
 * most 15 significant digits, so its JSON number always reads back as the same decimal.
 */
export function writeAmount(units: bigint, form: AmountForm): string | number {
  const canonical = unitsToText(units);
  const [whole, fraction = ''] = canonical.split('.');
  if (form === 'padded') return `${whole}.${fraction.padEnd(4, '0')}`;
  if (form === 'canonical') return canonical;
  if (String(Number(canonical)) !== canonical) throw new Error(`${canonical} is not exact as a JSON number`);
  return Number(canonical);
}

/** One amount as a snapshot may write it, with its exact value in 1/10,000ths. */
export function writtenAmount(units: fc.Arbitrary<bigint>) {
  return fc
    .record({ units, form: amountForm })
    .map(({ units, form }) => ({ units, written: writeAmount(units, form) }));
}

/**
 * Amounts for a team of at most `entries` amounts: each below 1/entries of the limit, so that the
 * team's totals stay below it whatever is drawn. Sub-unit amounts, everyday ones, and ones with
 * 14 or 15 significant digits.
 */
export function amountUnits(entries: number): fc.Arbitrary<bigint> {
  const max = (AMOUNT_LIMIT_UNITS - 1n) / BigInt(entries);
  return fc.oneof(
    fc.bigInt({ min: 0n, max: 10_000n }), // 0 .. 1: sub-cent fractions
    fc.bigInt({ min: 0n, max: 10n ** 8n }), // up to 10,000
    fc.bigInt({ min: max / 1_000n, max }), // up to the share of the limit: 14-15 significant digits
  );
}

/**
 * `count` amounts (1 to `maxParts`) that add up to exactly `total`, a total just below the
 * limit (99,999,990,000 .. 99,999,999,999.9999): the largest sums the contract allows.
 */
export function amountsSummingNearTheLimit(maxParts: number): fc.Arbitrary<{ total: bigint; parts: bigint[] }> {
  return fc
    .tuple(
      fc.bigInt({ min: AMOUNT_LIMIT_UNITS - 10n ** 8n, max: AMOUNT_LIMIT_UNITS - 1n }),
      fc.array(fc.bigInt({ min: 1n, max: 10n ** 6n }), { minLength: 1, maxLength: maxParts }),
    )
    .map(([total, weights]) => {
      const weightSum = weights.reduce((sum, w) => sum + w, 0n);
      const parts = weights.map((w) => (total * w) / weightSum);
      parts[parts.length - 1]! += total - parts.reduce((sum, p) => sum + p, 0n);
      return { total, parts };
    });
}
