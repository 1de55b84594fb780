import { isLosslessNumber, parse } from 'lossless-json';

/**
 * The finance response as the contract defines it, computed independently of the product with
 * bigint counts of 1/10,000ths, and a check of a response body against it that reads every
 * amount from the body's text (no float in between).
 */
export interface CostEntry {
  label: string;
  currency: string;
  units: bigint;
}

export interface FinanceExpectation {
  lines: CostEntry[];
  totals: Map<string, bigint>;
  grandTotal: bigint;
}

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export function expectedFinance(costs: CostEntry[]): FinanceExpectation {
  const lines = new Map<string, CostEntry>();
  for (const cost of costs) {
    const key = `${cost.label}\u0000${cost.currency}`;
    const line = lines.get(key);
    lines.set(key, { ...cost, units: (line?.units ?? 0n) + cost.units });
  }
  const sorted = [...lines.values()].sort(
    (a, b) => byCodeUnits(a.label, b.label) || byCodeUnits(a.currency, b.currency),
  );
  const totals = new Map<string, bigint>();
  for (const line of sorted) totals.set(line.currency, (totals.get(line.currency) ?? 0n) + line.units);
  return { lines: sorted, totals, grandTotal: sorted.reduce((sum, line) => sum + line.units, 0n) };
}

/** Canonical decimal text of an amount: no trailing zeros, no exponent. */
export function unitsToText(units: bigint): string {
  const whole = units / 10_000n;
  const fraction = (units % 10_000n).toString().padStart(4, '0').replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : `${whole}`;
}

/**
 * A decimal number's text as an exact count of 1/10,000ths. Rejects what the API must never
 * write for money: exponents, or more than 4 decimals.
 */
function textToUnits(text: string): bigint {
  const match = /^(-?)([0-9]+)(?:\.([0-9]{1,4}))?$/.exec(text);
  if (!match) throw new Error(`${text} is not a plain decimal with at most 4 decimals`);
  const units = BigInt(match[2]!) * 10_000n + BigInt((match[3] ?? '').padEnd(4, '0'));
  return match[1] ? -units : units;
}

/** What differs between a finances body and the expectation (empty when they agree exactly). */
export function financeDifferences(bodyText: string, expected: FinanceExpectation): string[] {
  const problems: string[] = [];
  // Every number as lossless-json parses it: a LosslessNumber holding its text as written.
  const body = parse(bodyText) as Record<string, unknown>;
  const exactAmount = (where: string, value: unknown, units: bigint) => {
    if (!isLosslessNumber(value)) return problems.push(`${where} is not a JSON number`);
    let got: bigint;
    try {
      got = textToUnits(value.value);
    } catch (error) {
      return problems.push(`${where}: ${(error as Error).message}`);
    }
    if (got !== units) problems.push(`${where} is ${value.value}, expected ${unitsToText(units)}`);
    else if (value.value !== unitsToText(units))
      problems.push(`${where} is written ${value.value}, not ${unitsToText(units)}`);
  };
  const data = body.data as Record<string, unknown>[];
  if (!Array.isArray(data)) return ['data is not an array'];
  if (data.length !== expected.lines.length)
    problems.push(`${data.length} line items, expected ${expected.lines.length}`);
  expected.lines.forEach((line, i) => {
    const got = data[i];
    if (!got) return;
    if (got.label !== line.label || got.currency !== line.currency) {
      problems.push(
        `line ${i} is ${String(got.label)}/${String(got.currency)}, expected ${line.label}/${line.currency}`,
      );
    }
    exactAmount(`line ${i} (${line.label} ${line.currency}) amount`, got.amount, line.units);
  });
  const totals = body.totals as Record<string, unknown>;
  const keys = Object.keys(totals ?? {}).sort();
  const expectedKeys = [...expected.totals.keys()].sort();
  if (JSON.stringify(keys) !== JSON.stringify(expectedKeys))
    problems.push(`totals has ${keys.join(',')}, expected ${expectedKeys.join(',')}`);
  for (const [currency, units] of expected.totals) exactAmount(`totals.${currency}`, totals?.[currency], units);
  exactAmount('grand_total', body.grand_total, expected.grandTotal);
  if (!isLosslessNumber(body.results) || body.results.value !== String(expected.lines.length))
    problems.push('results is not the number of line items');
  if (!Array.isArray(body.meta) || body.meta.length !== 0) problems.push('meta is not []');
  if ('links' in body) problems.push('finances has links');
  return problems;
}
