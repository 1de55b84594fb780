import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable } from '../support/dynamodb.ts';

/** GET /api/openapi.json: the committed document, served without a token. */
let api: TestApi;
const committed = readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8');

beforeAll(async () => {
  api = await startApi(await freshTable());
});
afterAll(() => api.close());

it('serves the committed OpenAPI document without a token, as JSON', async () => {
  const res = await api.get('/api/openapi.json');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.body).toEqual(JSON.parse(committed));
  expect(res.headers.get('etag')).toMatch(/^".+"$/);
});

it('serves it whatever token comes along, and only on GET', async () => {
  expect((await api.get('/api/openapi.json', { token: 'not-a-token' })).status).toBe(200);
  expect((await api.get('/api/openapi.json', { method: 'POST' })).status).toBe(404);
});
