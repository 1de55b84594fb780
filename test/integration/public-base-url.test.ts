import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument } from '../support/dynamodb.ts';
import { projects, snapshot, team, token, user } from '../support/snapshots.ts';

/** docs/contract.md, section 4: PUBLIC_BASE_URL, when configured, is the base of every link. */
let api: TestApi;

beforeAll(async () => {
  const table = await freshTable();
  await importDocument(
    table,
    snapshot({
      teams: [team(1, 'acme')],
      users: [user(10, [1])],
      tokens: [token(10, 'secret-token')],
      projects: projects(1, 25),
    }),
  );
  api = await startApi(table, { PUBLIC_BASE_URL: 'https://api.example.com/v2/' });
});
afterAll(() => api.close());

it('builds meta.path and links on PUBLIC_BASE_URL, whatever the request host', async () => {
  const { body } = await api.get('/api/acme/projects', {
    token: 'secret-token',
    headers: { Host: 'internal:3000', 'X-Forwarded-Proto': 'http' },
  });
  expect(body.meta.path).toBe('https://api.example.com/v2/api/acme/projects');
  expect(body.links).toEqual({
    first: 'https://api.example.com/v2/api/acme/projects?page=1',
    last: 'https://api.example.com/v2/api/acme/projects?page=2',
    prev: null,
    next: 'https://api.example.com/v2/api/acme/projects?page=2',
  });
});
