import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseAmount } from '../../shared/domain/decimal.ts';
import { financeFieldsJson, SERVERS_LABEL, summarizeCosts, type Cost } from '../../shared/domain/finance.ts';

/** A cost of `amount` (decimal text), so tests read in money rather than in units. */
function cost(label: string, amount: string, currency = 'EUR'): Cost {
  const parsed = parseAmount(amount);
  if (!parsed.ok) throw new Error(`bad test amount ${amount}`);
  return { label, currency, units: parsed.units };
}

const server = (amount: string, currency = 'EUR') => cost(SERVERS_LABEL, amount, currency);

/** The finance fields as the response body carries them, parsed. */
const fields = (costs: Cost[]) => JSON.parse(`{${financeFieldsJson(summarizeCosts(costs))}}`);

describe('summarizeCosts', () => {
  it('has no line items, no totals and a grand total of 0 when there are no costs', () => {
    expect(summarizeCosts([])).toEqual({ lineItems: [], totals: [], grandTotal: 0n });
  });

  it('reports the servers under the label "Servers"', () => {
    expect(SERVERS_LABEL).toBe('Servers');
  });

  it('makes one line item of costs with the same label and currency', () => {
    const summary = summarizeCosts([server('24.15'), server('24.15')]);
    expect(summary.lineItems).toEqual([{ label: 'Servers', currency: 'EUR', units: 483_000n }]);
  });

  it('makes one line item per currency of the same label', () => {
    const summary = summarizeCosts([server('10', 'USD'), server('20', 'EUR')]);
    expect(summary.lineItems).toEqual([
      { label: 'Servers', currency: 'EUR', units: 200_000n },
      { label: 'Servers', currency: 'USD', units: 100_000n },
    ]);
  });

  it('joins a cost labelled "Servers" to the servers’ line item of its currency', () => {
    const summary = summarizeCosts([server('24.15'), cost('Servers', '0.85'), server('1', 'USD')]);
    expect(summary.lineItems).toEqual([
      { label: 'Servers', currency: 'EUR', units: 250_000n },
      { label: 'Servers', currency: 'USD', units: 10_000n },
    ]);
  });

  it('keeps labels differing only in case apart', () => {
    const summary = summarizeCosts([cost('Servers', '1'), cost('servers', '2')]);
    expect(summary.lineItems.map((l) => l.label)).toEqual(['Servers', 'servers']);
  });

  it('orders line items by label comparing code units: capitals before lower case', () => {
    const summary = summarizeCosts([cost('backups', '1'), cost('Zeta', '1'), cost('Backups', '1'), cost('alpha', '1')]);
    expect(summary.lineItems.map((l) => l.label)).toEqual(['Backups', 'Zeta', 'alpha', 'backups']);
  });

  it('orders a label with a non-ASCII letter after every ASCII one', () => {
    const summary = summarizeCosts([cost('Éclairage', '1'), cost('zoo', '1'), cost('Energy', '1')]);
    expect(summary.lineItems.map((l) => l.label)).toEqual(['Energy', 'zoo', 'Éclairage']);
  });

  it('orders line items of one label by currency', () => {
    const summary = summarizeCosts([
      cost('Backups', '1', 'USD'),
      cost('Backups', '1', 'CHF'),
      cost('Backups', '1', 'EUR'),
    ]);
    expect(summary.lineItems.map((l) => l.currency)).toEqual(['CHF', 'EUR', 'USD']);
  });

  it('orders by label before currency', () => {
    const summary = summarizeCosts([cost('B', '1', 'AAA'), cost('A', '1', 'ZZZ')]);
    expect(summary.lineItems.map((l) => [l.label, l.currency])).toEqual([
      ['A', 'ZZZ'],
      ['B', 'AAA'],
    ]);
  });

  it('totals each currency across labels', () => {
    const summary = summarizeCosts([server('48.3'), cost('Backups', '5'), cost('Backups', '2', 'USD')]);
    expect(summary.totals).toEqual([
      { currency: 'EUR', units: 533_000n },
      { currency: 'USD', units: 20_000n },
    ]);
  });

  it('makes the grand total the sum of every line item', () => {
    const summary = summarizeCosts([server('48.3'), cost('Backups', '5'), cost('Backups', '2', 'USD')]);
    expect(summary.grandTotal).toBe(553_000n);
  });

  it('sums exactly: 0.1 + 0.2 is 0.3', () => {
    expect(summarizeCosts([cost('A', '0.1'), cost('A', '0.2')]).grandTotal).toBe(3_000n);
  });

  it('leaves the costs it was given unchanged', () => {
    const costs = [server('1'), server('2')];
    summarizeCosts(costs);
    expect(costs).toEqual([server('1'), server('2')]);
  });

  it('keeps every amount: per currency, the line items sum to the costs, and the totals to the grand total', () => {
    const arbitraryCost = fc.record({
      label: fc.constantFrom('Servers', 'Backups', 'backups', 'Zeta', 'Éclairage'),
      currency: fc.constantFrom('EUR', 'USD', 'CHF'),
      units: fc.bigInt({ min: 0n, max: 10n ** 12n }),
    });
    fc.assert(
      fc.property(fc.array(arbitraryCost, { maxLength: 40 }), (costs) => {
        const summary = summarizeCosts(costs);
        const sumBy = (list: { currency: string; units: bigint }[], currency: string) =>
          list.filter((c) => c.currency === currency).reduce((acc, c) => acc + c.units, 0n);
        for (const currency of ['EUR', 'USD', 'CHF']) {
          expect(sumBy(summary.lineItems, currency)).toBe(sumBy(costs, currency));
        }
        expect(summary.totals.reduce((acc, t) => acc + t.units, 0n)).toBe(summary.grandTotal);
        expect(summary.grandTotal).toBe(costs.reduce((acc, c) => acc + c.units, 0n));
        const keys = summary.lineItems.map((l) => `${l.label}\u0000${l.currency}`);
        expect(new Set(keys).size).toBe(keys.length);
        const sorted = [...summary.lineItems].sort((a, b) =>
          a.label === b.label ? (a.currency < b.currency ? -1 : 1) : a.label < b.label ? -1 : 1,
        );
        expect(summary.lineItems).toEqual(sorted);
      }),
    );
  });
});

describe('financeFieldsJson', () => {
  it('writes the contract’s example exactly', () => {
    expect(financeFieldsJson(summarizeCosts([server('24.15'), server('24.15'), cost('Backups', '5.00')]))).toBe(
      '"data":[{"label":"Backups","amount":5,"currency":"EUR"},{"label":"Servers","amount":48.3,"currency":"EUR"}],' +
        '"totals":{"EUR":53.3},"grand_total":53.3,"results":2',
    );
  });

  it('writes no line items as an empty list, totals as an empty object and a grand total of 0', () => {
    expect(fields([])).toEqual({ data: [], totals: {}, grand_total: 0, results: 0 });
  });

  it('writes amounts as JSON numbers', () => {
    expect(fields([cost('Backups', '5.00')]).data[0].amount).toBe(5);
  });

  it('writes 0.1 + 0.2 as 0.3, never 0.30000000000000004', () => {
    expect(financeFieldsJson(summarizeCosts([cost('A', '0.1'), cost('A', '0.2')]))).toContain('"amount":0.3,');
  });

  it('writes an amount beyond float precision digit for digit', () => {
    expect(financeFieldsJson(summarizeCosts([cost('A', '12345678901234.5678')]))).toContain(
      '"amount":12345678901234.5678,',
    );
  });

  it('writes a total per currency', () => {
    expect(fields([cost('A', '1', 'USD'), cost('B', '2.5', 'EUR'), cost('C', '0.5', 'EUR')]).totals).toEqual({
      EUR: 3,
      USD: 1,
    });
  });

  it('counts the line items in results', () => {
    expect(fields([cost('A', '1'), cost('A', '1'), cost('B', '1'), cost('B', '1', 'USD')]).results).toBe(3);
  });

  it('escapes a label that needs it', () => {
    expect(fields([cost('Backups "daily"\n\\', '1')]).data[0].label).toBe('Backups "daily"\n\\');
  });

  it('writes fields in the order label, amount, currency', () => {
    expect(Object.keys(fields([cost('A', '1')]).data[0])).toEqual(['label', 'amount', 'currency']);
  });

  it('writes keys in the order data, totals, grand_total, results', () => {
    expect(Object.keys(fields([cost('A', '1')]))).toEqual(['data', 'totals', 'grand_total', 'results']);
  });
});
