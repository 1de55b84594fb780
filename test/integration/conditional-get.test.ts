import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { projects, server, snapshot, team, token, user } from '../support/snapshots.ts';

/** Conditional GETs: strong ETags over the body without served_in, If-None-Match, 304. */
let api: TestApi;
let table: TestTable;
const data = (count: number) =>
  snapshot({
    teams: [team(1, 'acme')],
    users: [user(10, [1])],
    tokens: [token(10, 'secret-token')],
    servers: [server(7, 1, '10.00')],
    projects: projects(1, count),
  });

beforeAll(async () => {
  table = await freshTable();
  await importDocument(table, data(30));
  api = await startApi(table);
});
afterAll(() => api.close());

const get = (path: string, ifNoneMatch?: string) =>
  api.get(path, { token: 'secret-token', headers: ifNoneMatch ? { 'If-None-Match': ifNoneMatch } : {} });

describe('conditional GETs', () => {
  it.each(['/api/acme/projects', '/api/acme/daemons', '/api/acme/finances'])(
    'tags every 200 of %s with a strong ETag and private Cache-Control',
    async (path) => {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(res.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]{32}"$/);
      expect(res.headers.get('cache-control')).toBe('private, no-cache');
    },
  );

  it('gives the same tag to the same content although served_in differs', async () => {
    const a = await get('/api/acme/projects?page=2');
    const b = await get('/api/acme/projects?page=2');
    expect(a.headers.get('etag')).toBe(b.headers.get('etag'));
    expect((await get('/api/acme/projects?page=1')).headers.get('etag')).not.toBe(a.headers.get('etag'));
  });

  it.each([
    ['the tag itself', (tag: string) => tag],
    ['the tag as a weak validator', (tag: string) => `W/${tag}`],
    ['a list that contains the tag', (tag: string) => `"other", ${tag}`],
    ['*', () => '*'],
  ])('answers If-None-Match with %s by 304 and no body', async (_, header) => {
    const tag = (await get('/api/acme/finances')).headers.get('etag')!;
    const res = await get('/api/acme/finances', header(tag));
    expect(res.status).toBe(304);
    expect(res.text).toBe('');
    expect(res.headers.get('etag')).toBe(tag);
    expect(res.headers.get('cache-control')).toBe('private, no-cache');
  });

  it('answers a stale tag with the full 200', async () => {
    const res = await get('/api/acme/projects', '"stale"');
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(20);
  });

  it('changes the tag when an import changes the data', async () => {
    const before = (await get('/api/acme/projects')).headers.get('etag')!;
    await importDocument(table, data(31));
    const res = await get('/api/acme/projects', before);
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).not.toBe(before);
  });

  it('never tags or short-circuits an error', async () => {
    for (const res of [
      await api.get('/api/acme/projects', { headers: { 'If-None-Match': '*' } }),
      await get('/api/nope/projects', '*'),
      await get('/api/acme/projects?page=0', '*'),
    ]) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.headers.get('etag')).toBeNull();
    }
  });
});
