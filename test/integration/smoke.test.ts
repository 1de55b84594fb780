import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument } from '../support/dynamodb.ts';
import { projects, snapshot, team, token, user } from '../support/snapshots.ts';

let api: TestApi;
beforeAll(async () => {
  const table = await freshTable();
  await importDocument(table, snapshot({ teams: [team(1, 'acme')], users: [user(10, [1])], tokens: [token(10, 'secret-a')], projects: projects(1, 3) }));
  api = await startApi(table);
});
afterAll(() => api.close());

describe('smoke', () => {
  it('serves the first page of projects', async () => {
    const res = await api.get('/api/acme/projects', { token: 'secret-a' });
    expect(res.status).toBe(200);
    expect(res.body.meta.total).toBe(3);
  });
});
