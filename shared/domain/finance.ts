import { formatAmount } from './decimal.ts';

/** Label under which a team's servers' monthly costs are reported. */
export const SERVERS_LABEL = 'Servers';

export interface Cost {
  label: string;
  currency: string;
  units: bigint;
}

/**
 * A team's costs: one line per (label, currency), ordered by label then currency as plain code
 * units; totals per currency; the grand total.
 */
export type FinanceSummary = ReturnType<typeof summarizeCosts>;

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const sum = (lines: Cost[]) => lines.reduce((total, line) => total + line.units, 0n);

/** Adds a cost to the line of its label and currency. */
export function addCost(lines: Map<string, Cost>, cost: Cost): void {
  const key = JSON.stringify([cost.label, cost.currency]);
  const line = lines.get(key);
  if (line) line.units += cost.units;
  else lines.set(key, { ...cost });
}

/** Groups costs into line items and sums them exactly. */
export function summarizeCosts(costs: Iterable<Cost>) {
  const lines = new Map<string, Cost>();
  for (const cost of costs) addCost(lines, cost);
  const lineItems = [...lines.values()].sort(
    (a, b) => byCodeUnits(a.label, b.label) || byCodeUnits(a.currency, b.currency),
  );
  const currencies = [...new Set(lineItems.map((line) => line.currency))].sort(byCodeUnits);
  return {
    lineItems,
    totals: currencies.map((currency) => ({
      currency,
      units: sum(lineItems.filter((line) => line.currency === currency)),
    })),
    grandTotal: sum(lineItems),
  };
}

/**
 * The finance response's fields before `meta` and `served_in`, as JSON text. Amounts are written
 * as exact decimal literals, so no float rounding happens on the way out either.
 */
export function financeFieldsJson(summary: FinanceSummary): string {
  const data = summary.lineItems.map(
    (line) =>
      `{"label":${JSON.stringify(line.label)},"amount":${formatAmount(line.units)},` +
      `"currency":${JSON.stringify(line.currency)}}`,
  );
  const totals = summary.totals.map((t) => `${JSON.stringify(t.currency)}:${formatAmount(t.units)}`);
  const grandTotal = formatAmount(summary.grandTotal);
  return (
    `"data":[${data.join(',')}],"totals":{${totals.join(',')}},"grand_total":${grandTotal},` +
    `"results":${data.length}`
  );
}
