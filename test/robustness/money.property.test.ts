import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { expectedFinance, financeDifferences, unitsToText, type CostEntry } from '../support/finance-model.ts';

/**
 * Money, property-based: random decimal amounts (strings with trailing zeros, JSON numbers,
 * sub-cent fractions, amounts far beyond a double's 15 digits) on servers and cost records;
 * the finances response must carry the exact sums, compared with bigint arithmetic on the
 * response's own text.
 */
const RUNS = 40;
const SECRET = 'money-secret';
const LABELS = ['Servers', 'servers', 'Backups', 'Backups ', 'Z', 'a', 'Élan', '😀 emoji', 'DNS'];
const CURRENCIES = ['EUR', 'USD', 'JPY', 'CHF'];

let api: TestApi;
let table: TestTable;
let run = 0;
let amounts = 0;

beforeAll(async () => {
  table = await freshTable();
  api = await startApi(table);
});
afterAll(() => api?.close());

const units = fc.oneof(
  fc.bigInt({ min: 0n, max: 10_000n }), // below one unit of currency: 0.0001 .. 1
  fc.bigInt({ min: 0n, max: 10n ** 8n }),
  // Large amounts within the contract's limits (section 7): every amount, per-currency total and
  // grand total below 100,000,000,000. At most 18 amounts a team, so each below 1/18 of it:
  // still 14 significant digits with 4 decimals, where float addition would lose the last ones.
  fc.bigInt({ min: 0n, max: (10n ** 15n - 1n) / 18n }),
);
/** One amount as a snapshot may write it, with its exact value. */
const amount = fc.record({ units, form: fc.constantFrom('canonical', 'padded', 'number') }).map(({ units, form }) => {
  const canonical = unitsToText(units);
  const [whole, fraction = ''] = canonical.split('.');
  if (form === 'padded') return { units, written: `${whole}.${fraction.padEnd(4, '0')}` as string | number };
  // A JSON number only where it reads back as the same decimal (as a snapshot author would write it).
  if (form === 'number' && String(Number(canonical)) === canonical) return { units, written: Number(canonical) };
  return { units, written: canonical };
});
const money = fc.record({
  servers: fc.array(fc.record({ amount, currency: fc.constantFrom(...CURRENCIES) }), { maxLength: 6 }),
  costs: fc.array(fc.record({ amount, currency: fc.constantFrom(...CURRENCIES), label: fc.constantFrom(...LABELS) }), { maxLength: 12 }),
});

async function finances(teamId: number) {
  const res = await api.get(`/api/${teamId}/finances`, { token: SECRET });
  expect(res.status).toBe(200);
  return res.text;
}

async function importMoney(teamId: number, servers: { amount: string | number; currency: string }[], costs: { amount: string | number; currency: string; label: string }[]) {
  await importDocument(table, {
    teams: [{ id: teamId, slug: `money-${teamId}`, name: 'Money' }],
    users: [{ id: 1, teams: [teamId] }],
    tokens: [{ user_id: 1, token: SECRET, abilities: ['finances:read'] }],
    servers: servers.map((s, i) => ({ id: teamId * 100 + i, team_id: teamId, name: `s${i}`, monthly_cost: s.amount, currency: s.currency })),
    costs: costs.map((c) => ({ team_id: teamId, label: c.label, amount: c.amount, currency: c.currency })),
  });
}

describe('finance sums (property-based, through HTTP)', () => {
  it('adds 0.1 and 0.2 to 0.3, not 0.30000000000000004', async () => {
    await importMoney(9_999, [{ amount: 0.1, currency: 'EUR' }], [{ amount: '0.2', currency: 'EUR', label: 'Servers' }, { amount: 0.7, currency: 'USD', label: 'DNS' }]);
    const text = await finances(9_999);
    expect(text).toContain('"totals":{"EUR":0.3,"USD":0.7}');
    expect(text).toContain('"grand_total":1,');
  });

  it('returns exact sums per line item, per currency and in total for random decimal amounts', async () => {
    await fc.assert(
      fc.asyncProperty(money, async ({ servers, costs }) => {
        run++;
        const teamId = 1_000 + run;
        await importMoney(
          teamId,
          servers.map((s) => ({ amount: s.amount.written, currency: s.currency })),
          costs.map((c) => ({ amount: c.amount.written, currency: c.currency, label: c.label })),
        );
        amounts += servers.length + costs.length;
        const entries: CostEntry[] = [
          ...servers.map((s) => ({ label: 'Servers', currency: s.currency, units: s.amount.units })),
          ...costs.map((c) => ({ label: c.label, currency: c.currency, units: c.amount.units })),
        ];
        const problems = financeDifferences(await finances(teamId), expectedFinance(entries));
        expect(problems, problems.join('\n')).toEqual([]);
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
    console.info(`money: ${run} teams, ${amounts} random amounts summed exactly`);
  }, 60_000);
});
