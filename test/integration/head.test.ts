import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiResponse, type TestApi } from '../support/api.ts';
import { freshTable, importDocument } from '../support/dynamodb.ts';
import { daemons, environment, projects, server, snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * HEAD (docs/contract.md, section 1, RFC 9110 9.3.2): on every route, the status and headers GET would
 * answer, the ETag included, and no body; through the local server, which routes HEAD as the
 * stack does. Content-Length: a HEAD answer sends none (RFC 9110 lets it be left out), as a 304
 * sends none; a GET sends the length of its body.
 */
let api: TestApi;

beforeAll(async () => {
  const table = await freshTable();
  await importDocument(
    table,
    snapshot({
      teams: [team(1, 'acme'), team(2, 'globex')],
      users: [user(10, [1]), user(11, [2])],
      tokens: [token(10, 'secret-all'), token(10, 'secret-finances', ['finances:read'])],
      projects: projects(1, 25),
      environments: [environment(5, 1)],
      servers: [server(7, 1, '24.15')],
      daemons: daemons(5, 7, 3),
    }),
  );
  api = await startApi(table);
});
afterAll(() => api.close());

/** Headers that say when and how, not what: they may differ between two answers. */
const TRANSPORT = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);
const headersOf = (res: ApiResponse) => Object.fromEntries([...res.headers].filter(([name]) => !TRANSPORT.has(name)));

async function getAndHead(path: string, options: { token?: string; headers?: Record<string, string> } = {}) {
  const get = await api.get(path, options);
  const head = await api.get(path, { ...options, method: 'HEAD' });
  return { get, head };
}

describe('HEAD answers as GET would, without a body', () => {
  it.each([
    ['a page of projects', '/api/acme/projects?per_page=10&page=2', 'secret-all', 200],
    ['daemons, the team by id', '/api/1/daemons', 'secret-all', 200],
    ['finances', '/api/acme/finances', 'secret-all', 200],
    ['a page past the last', '/api/acme/projects?page=9', 'secret-all', 200],
    ['the OpenAPI document, without a token', '/api/openapi.json', undefined, 200],
    ['no token', '/api/acme/projects', undefined, 401],
    ['an unknown token', '/api/acme/finances', 'not-a-token', 401],
    ['a token without the ability', '/api/acme/daemons', 'secret-finances', 403],
    ['an unknown team', '/api/nope/projects', 'secret-all', 404],
    ["a team the token's user is not in", '/api/globex/finances', 'secret-all', 404],
    ['per_page above 50 and page 0', '/api/acme/projects?per_page=51&page=0', 'secret-all', 422],
  ])('%s (%s): status %i, the same headers, no body', async (_name, path, secret, status) => {
    const { get, head } = await getAndHead(path, { token: secret });
    expect(get.status).toBe(status);
    expect(head.status).toBe(status);
    expect(headersOf(head)).toEqual(headersOf(get));
    expect(head.headers.get('content-type')).toMatch(/^application\/json/);
    expect(head.text).toBe('');
    expect(head.headers.get('content-length')).toBeNull();
    expect(Number(get.headers.get('content-length'))).toBe(Buffer.byteLength(get.text));
  });

  it('carries the ETag of the GET body, WWW-Authenticate on a 401', async () => {
    const ok = await getAndHead('/api/acme/projects', { token: 'secret-all' });
    expect(ok.head.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]{32}"$/);
    expect(ok.head.headers.get('etag')).toBe(ok.get.headers.get('etag'));
    const denied = await getAndHead('/api/acme/projects');
    expect(denied.head.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('answers If-None-Match naming the current ETag with 304, as GET does', async () => {
    const etag = (await api.get('/api/acme/daemons', { token: 'secret-all' })).headers.get('etag')!;
    const { get, head } = await getAndHead('/api/acme/daemons', {
      token: 'secret-all',
      headers: { 'If-None-Match': etag },
    });
    expect(get.status).toBe(304);
    expect(head.status).toBe(304);
    expect(headersOf(head)).toEqual(headersOf(get));
    expect(head.text).toBe('');
  });

  it("answers a HEAD whose ETag is sent back with a GET by 304: the tag is the GET body's", async () => {
    const etag = (await api.get('/api/acme/finances', { token: 'secret-all', method: 'HEAD' })).headers.get('etag')!;
    expect(
      (await api.get('/api/acme/finances', { token: 'secret-all', headers: { 'If-None-Match': etag } })).status,
    ).toBe(304);
  });
});

describe('other methods', () => {
  it.each(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])(
    '%s on a route is the routing 404, before any token check',
    async (method) => {
      for (const secret of [undefined, 'secret-all']) {
        const res = await api.get('/api/acme/projects', { token: secret, method });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ message: 'Not Found' });
        expect(res.headers.get('www-authenticate')).toBeNull();
      }
    },
  );

  it('HEAD on a path no route serves is the routing 404, without a body', async () => {
    const res = await api.get('/api/acme/servers', { token: 'secret-all', method: 'HEAD' });
    expect(res.status).toBe(404);
    expect(res.text).toBe('');
  });
});
