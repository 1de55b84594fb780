import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import {
  amountForm,
  amountsSummingNearTheLimit,
  amountUnits,
  contractName,
  writeAmount,
  writtenAmount,
} from '../support/contract-arbitraries.ts';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { expectedFinance, financeDifferences, type CostEntry } from '../support/finance-model.ts';
import { propertyParameters, replayHint, runs, timeLimit } from '../support/fuzz.ts';

/**
 * Money, property-based: random amounts on servers and cost records, each as the contract allows
 * it (below 100,000,000,000, at most 4 decimals, as decimal text with or without trailing zeros or
 * as a JSON number), with the team's totals below 100,000,000,000 too; the finances response must
 * carry the exact sums, compared with bigint arithmetic on the response's own text.
 *
 * Amounts past the contract's bounds are the importer's to reject, with their message: its own tests.
 */
const FILE = 'test/robustness/money.property.test.ts';
const RUNS = 40;
const EDGE_RUNS = 20;
const SECRET = 'money-secret';
const MAX_SERVERS = 6;
const MAX_COSTS = 12;
/** Labels that collide on purpose: `Servers` joins the servers' line item, case and spaces count. */
const LABELS = ['Servers', 'servers', 'Backups', 'Backups ', 'Z', 'a', 'Élan', '😀 emoji', 'DNS'];
const CURRENCIES = ['EUR', 'USD', 'JPY', 'CHF'];

let api: TestApi;
let table: TestTable;
let teams = 0;
let amounts = 0;

beforeAll(async () => {
  table = await freshTable();
  api = await startApi(table);
});
afterAll(() => api?.close());

const label = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...LABELS) }, { weight: 1, arbitrary: contractName });
const currency = fc.constantFrom(...CURRENCIES);

interface Drawn {
  units: bigint;
  written: string | number;
}
interface TeamMoney {
  servers: { amount: Drawn; currency: string }[];
  costs: { amount: Drawn; currency: string; label: string }[];
}

const amount = writtenAmount(amountUnits(MAX_SERVERS + MAX_COSTS));
const money: fc.Arbitrary<TeamMoney> = fc.record({
  servers: fc.array(fc.record({ amount, currency }), { maxLength: MAX_SERVERS }),
  costs: fc.array(fc.record({ amount, currency, label }), { maxLength: MAX_COSTS }),
});

/** A team whose amounts add up to just below the limit, spread over servers and cost records. */
const moneyNearTheLimit: fc.Arbitrary<TeamMoney> = fc
  .tuple(
    amountsSummingNearTheLimit(MAX_SERVERS),
    // Where each part goes: a server (no label) or a cost record, and in which currency.
    fc.array(fc.record({ form: amountForm, currency, label: fc.option(label, { nil: undefined }) }), {
      minLength: MAX_SERVERS,
      maxLength: MAX_SERVERS,
    }),
  )
  .map(([{ parts }, places]) => {
    const entries = parts.map((units, i) => {
      const place = places[i]!;
      return {
        amount: { units, written: writeAmount(units, place.form) },
        currency: place.currency,
        label: place.label,
      };
    });
    return {
      servers: entries.filter((e) => e.label === undefined).map(({ amount, currency }) => ({ amount, currency })),
      costs: entries.flatMap(({ amount, currency, label }) =>
        label === undefined ? [] : [{ amount, currency, label }],
      ),
    };
  });

async function finances(teamId: number) {
  const res = await api.get(`/api/${teamId}/finances`, { token: SECRET });
  expect(res.status, res.text).toBe(200);
  return res.text;
}

async function importMoney(
  teamId: number,
  servers: { amount: string | number; currency: string }[],
  costs: { amount: string | number; currency: string; label: string }[],
) {
  await importDocument(table, {
    teams: [{ id: teamId, slug: `money-${teamId}`, name: 'Money' }],
    users: [{ id: 1, teams: [teamId] }],
    tokens: [{ user_id: 1, token: SECRET, abilities: ['finances:read'] }],
    servers: servers.map((s, i) => ({
      id: teamId * 100 + i,
      team_id: teamId,
      name: `s${i}`,
      monthly_cost: s.amount,
      currency: s.currency,
    })),
    costs: costs.map((c) => ({ team_id: teamId, label: c.label, amount: c.amount, currency: c.currency })),
  });
}

/** Imports one team with these amounts and checks its finances response against the model. */
async function checkTeam(teamId: number, { servers, costs }: TeamMoney) {
  teams++;
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
}

describe('finance sums (property-based, through HTTP)', () => {
  afterAll(() => console.info(`money: ${teams} teams, ${amounts} random amounts summed exactly; ${replayHint(FILE)}`));

  it('adds 0.1 and 0.2 to 0.3, not 0.30000000000000004', async () => {
    await importMoney(
      9_999,
      [{ amount: 0.1, currency: 'EUR' }],
      [
        { amount: '0.2', currency: 'EUR', label: 'Servers' },
        { amount: 0.7, currency: 'USD', label: 'DNS' },
      ],
    );
    const text = await finances(9_999);
    expect(text).toContain('"totals":{"EUR":0.3,"USD":0.7}');
    expect(text).toContain('"grand_total":1,');
  });

  it(
    'returns exact sums per line item, per currency and in total for amounts of every size the contract allows',
    async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(money, async (team) => checkTeam(10_000 + ++run, team)),
        propertyParameters(RUNS),
      );
    },
    timeLimit(120_000, RUNS, runs(RUNS)),
  );

  it(
    "returns exact totals when a team's amounts add up to just below 100,000,000,000",
    async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(moneyNearTheLimit, async (team) => checkTeam(20_000 + ++run, team)),
        propertyParameters(EDGE_RUNS),
      );
    },
    timeLimit(120_000, EDGE_RUNS, runs(EDGE_RUNS)),
  );
});
