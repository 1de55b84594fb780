/**
 * Exact decimal money. Amounts are carried as bigint counts of 1/10,000ths, so sums never
 * drift (0.1 + 0.2 is 0.3) and no float ever touches an amount between import and response.
 */
const DECIMAL_PLACES = 4;
const UNIT = 10n ** BigInt(DECIMAL_PLACES);
const DECIMAL_TEXT = /^([0-9]+)(?:\.([0-9]+))?$/;
/** The largest JSON number whose 4th decimal is still exact in a double (2^53 / 10^4). */
const MAX_EXACT_NUMBER = Number.MAX_SAFE_INTEGER / 10 ** DECIMAL_PLACES;

export type ParsedAmount =
  | { ok: true; units: bigint }
  | { ok: false; problem: string };

/** Parses a snapshot amount: a decimal string or JSON number, not negative, at most 4 decimals. */
export function parseAmount(input: unknown): ParsedAmount {
  let text: string;
  if (typeof input === 'number') {
    if (!Number.isFinite(input)) return { ok: false, problem: 'is not a decimal number' };
    // Past this a JSON number no longer holds 4 exact decimals: the text must carry it.
    if (Math.abs(input) > MAX_EXACT_NUMBER) return { ok: false, problem: 'is too large to be exact as a JSON number; write it as a decimal string' };
    // String(n) gives the shortest text that reads back as n: 24.15 -> "24.15".
    text = String(input);
  } else if (typeof input === 'string') {
    text = input.trim();
  } else {
    return { ok: false, problem: 'must be a decimal string or a number' };
  }
  if (text.startsWith('-')) return { ok: false, problem: 'must not be negative' };
  const match = DECIMAL_TEXT.exec(text);
  if (!match) return { ok: false, problem: 'is not a decimal number' };
  const [, whole = '0', fraction = ''] = match;
  if (fraction.length > DECIMAL_PLACES) {
    return { ok: false, problem: `has more than ${DECIMAL_PLACES} decimals` };
  }
  return { ok: true, units: BigInt(whole) * UNIT + BigInt(fraction.padEnd(DECIMAL_PLACES, '0')) };
}

/** Shortest decimal text of an amount, usable verbatim as a JSON number: 53.3, 5, 0. */
export function formatAmount(units: bigint): string {
  const sign = units < 0n ? '-' : '';
  const abs = units < 0n ? -units : units;
  const whole = abs / UNIT;
  const fraction = (abs % UNIT).toString().padStart(DECIMAL_PLACES, '0').replace(/0+$/, '');
  return fraction ? `${sign}${whole}.${fraction}` : `${sign}${whole}`;
}
