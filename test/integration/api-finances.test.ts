import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument } from '../support/dynamodb.ts';
import { server, snapshot, team, token, user } from '../support/snapshots.ts';

/** docs/contract.md, section 5: the finance summary. */
let api: TestApi;

beforeAll(async () => {
  const table = await freshTable();
  await importDocument(
    table,
    snapshot({
      teams: [team(1, 'acme'), team(2, 'bare')],
      users: [user(10, [1, 2])],
      tokens: [token(10, 'secret-token', ['finances:read'])],
      servers: [server(7, 1, '0.1', 'EUR'), server(8, 1, 0.2, 'EUR'), server(9, 1, '19.90', 'USD')],
      costs: [
        { team_id: 1, label: 'Backups', amount: '5.00', currency: 'EUR' },
        { team_id: 1, label: 'Servers', amount: '0.0001', currency: 'EUR' },
        { team_id: 1, label: 'alpha', amount: '1', currency: 'EUR' },
        { team_id: 1, label: 'Zeta', amount: 2.5, currency: 'USD' },
        { team_id: 1, label: 'Zeta', amount: '2.5', currency: 'USD' },
        { team_id: 1, label: 'Backups', amount: '0', currency: 'CHF' },
      ],
    }),
  );
  api = await startApi(table);
});
afterAll(() => api.close());

describe('finances (section 5)', () => {
  it('answers one line per (label, currency), ordered by label then currency as plain code units', async () => {
    const { status, body } = await api.get('/api/acme/finances', { token: 'secret-token' });
    expect(status).toBe(200);
    expect(body.data).toEqual([
      { label: 'Backups', amount: 0, currency: 'CHF' },
      { label: 'Backups', amount: 5, currency: 'EUR' },
      { label: 'Servers', amount: 0.3001, currency: 'EUR' },
      { label: 'Servers', amount: 19.9, currency: 'USD' },
      { label: 'Zeta', amount: 5, currency: 'USD' },
      { label: 'alpha', amount: 1, currency: 'EUR' },
    ]);
  });

  it('sums exactly: 0.1 + 0.2 is 0.3, written as a JSON number', async () => {
    const { text, body } = await api.get('/api/acme/finances', { token: 'secret-token' });
    expect(text).toContain('{"label":"Servers","amount":0.3001,"currency":"EUR"}');
    expect(body.totals).toEqual({ CHF: 0, EUR: 6.3001, USD: 24.9 });
    expect(text).toContain('"totals":{"CHF":0,"EUR":6.3001,"USD":24.9}');
    expect(body.grand_total).toBe(31.2001);
    expect(text).not.toMatch(/\d\.\d{5,}/);
  });

  it('has keys data, totals, grand_total, results, meta, served_in: meta an empty array, no links', async () => {
    const { body } = await api.get('/api/acme/finances', { token: 'secret-token' });
    expect(Object.keys(body)).toEqual(['data', 'totals', 'grand_total', 'results', 'meta', 'served_in']);
    expect(body.results).toBe(6);
    expect(body.meta).toEqual([]);
    expect(body).not.toHaveProperty('links');
    expect(body.served_in).toMatch(/^\d+(\.\d{1,2})?ms$/);
  });

  it('answers a team without costs with {} totals and a grand total of 0', async () => {
    const { body } = await api.get('/api/bare/finances', { token: 'secret-token' });
    expect(body).toMatchObject({ data: [], totals: {}, grand_total: 0, results: 0, meta: [] });
  });
});
