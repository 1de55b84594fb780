/**
 * Exact decimal numbers, judged as written (docs/contract.md, section 7). Amounts are carried as
 * bigint counts of 1/10,000ths, so sums never drift (0.1 + 0.2 is 0.3) and no float ever touches
 * an amount between import and response.
 */
const DECIMAL_PLACES = 4;
const UNIT = 10n ** BigInt(DECIMAL_PLACES);
const NUMBER_TEXT = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;
/** Decimal strings: digits, an optional fraction (and a sign, for "-0"). */
const DECIMAL_STRING = /^-?[0-9]+(?:\.[0-9]+)?$/;

/**
 * A JSON number whose text no double holds (`800.0000000000000001`, `9007199254740993`): the
 * snapshot reader keeps its text, so that it is judged as the file writes it, never as rounded.
 */
export class WrittenNumber {
  readonly text: string;
  /** As a message shows it: the text, or the beginning of a number too long to keep (json-records.ts). */
  readonly shown: string;
  constructor(text: string, shown = text) {
    this.text = text;
    this.shown = shown;
  }
  toString(): string {
    return this.text;
  }
}

/** The exact value of a number's text: coefficient × 10^exponent, without trailing zeros (0 has no sign). */
function exactValue(text: string): { negative: boolean; coefficient: bigint; exponent: number } | undefined {
  const match = NUMBER_TEXT.exec(text);
  if (!match) return undefined;
  const [, sign, whole = '', fraction = '', exponent = '0'] = match;
  const digits = (whole + fraction).replace(/^0+/, '');
  const significant = digits.replace(/0+$/, '');
  if (!significant) return { negative: false, coefficient: 0n, exponent: 0 };
  return {
    negative: sign === '-',
    coefficient: BigInt(significant),
    exponent: Number(exponent) - fraction.length + digits.length - significant.length,
  };
}

/**
 * A JSON number's text as the value to check: a number when the double holds it exactly as
 * written, else a WrittenNumber.
 */
export function jsonNumber(text: string): number | WrittenNumber {
  const value = Number(text);
  const exactly = (written: string) => {
    const exact = exactValue(written);
    return exact && `${exact.negative}${exact.coefficient}e${exact.exponent}`;
  };
  return String(value) === text || exactly(String(value)) === exactly(text) ? value : new WrittenNumber(text);
}

/** Whether a JSON value is a whole number too large to be an exact double (its rule is "at most 9007199254740991"). */
export function isLargeInteger(input: unknown): boolean {
  if (typeof input === 'number') return Number.isInteger(input) && input > Number.MAX_SAFE_INTEGER;
  const value = input instanceof WrittenNumber ? exactValue(input.text) : undefined;
  return value !== undefined && !value.negative && value.exponent >= 0;
}

type ParsedAmount = { ok: true; units: bigint } | { ok: false; problem: string };

/** Parses a snapshot amount: a decimal string or JSON number, not negative, at most 4 decimals. */
export function parseAmount(input: unknown): ParsedAmount {
  const isNumber = typeof input === 'number' || input instanceof WrittenNumber;
  if (!isNumber && typeof input !== 'string') return { ok: false, problem: 'must be a decimal string or a number' };
  const text = isNumber ? String(input) : input.trim();
  const value = isNumber || DECIMAL_STRING.test(text) ? exactValue(text) : undefined;
  if (!value) return { ok: false, problem: 'is not a decimal number' };
  if (value.negative) return { ok: false, problem: 'must not be negative' };
  if (value.exponent < -DECIMAL_PLACES) return { ok: false, problem: `has more than ${DECIMAL_PLACES} decimals` };
  // Past 10^20 an amount is far beyond any limit: the power is capped so that it stays cheap to compute.
  return { ok: true, units: value.coefficient * 10n ** BigInt(Math.min(value.exponent, 20) + DECIMAL_PLACES) };
}

/** Shortest decimal text of an amount, usable verbatim as a JSON number: 53.3, 5, 0. */
export function formatAmount(units: bigint): string {
  const sign = units < 0n ? '-' : '';
  const abs = units < 0n ? -units : units;
  const whole = abs / UNIT;
  const fraction = (abs % UNIT).toString().padStart(DECIMAL_PLACES, '0').replace(/0+$/, '');
  return fraction ? `${sign}${whole}.${fraction}` : `${sign}${whole}`;
}
