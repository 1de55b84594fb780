import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revoke } from '../../commands/tokens/tokens.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument } from '../support/dynamodb.ts';
import { environment, daemons, projects, server, snapshot, team, token, user } from '../support/snapshots.ts';

/** docs/contract.md, sections 1 and 2: routing, the order of checks, and every error body. */
let api: TestApi;

beforeAll(async () => {
  const table = await freshTable();
  await importDocument(
    table,
    snapshot({
      teams: [team(1, 'acme'), team(2, 'globex'), team(3, 'initech')],
      users: [user(10, [1]), user(11, [2]), user(12, [])],
      tokens: [
        token(10, 'all-of-10', ['*']),
        token(10, 'projects-10', ['projects:read']),
        token(10, 'daemons-10', ['daemons:read']),
        token(10, 'finances-10', ['finances:read']),
        token(10, 'none-of-10', []),
        token(10, 'expired-10', ['*'], { expires_at: '2020-01-01T00:00:00+00:00' }),
        token(10, 'future-10', ['*'], { expires_at: '2999-01-01T00:00:00Z' }),
        token(10, 'revoked-10', ['*']),
        token(11, 'all-of-11', ['*']),
        token(12, 'all-of-12', ['*']),
      ],
      environments: [environment(5, 1)],
      servers: [server(7, 1)],
      projects: projects(1, 3),
      daemons: daemons(5, 7, 2),
    }),
  );
  await revoke(table.doc, table.tableName, { secret: 'revoked-10' });
  api = await startApi(table);
});
afterAll(() => api.close());

const ROUTES = [
  { path: 'projects', ability: 'projects:read' },
  { path: 'daemons', ability: 'daemons:read' },
  { path: 'finances', ability: 'finances:read' },
] as const;
const NOT_FOUND = { message: 'Not Found' };
const UNAUTHENTICATED = { message: 'Unauthenticated.' };

describe('routing (section 1)', () => {
  it.each([
    '/api/acme',
    '/api/acme/servers',
    '/api/acme/projects/',
    '/api/acme/projects/1',
    '/api//projects',
    '/',
    '/projects',
    '/API/acme/projects',
  ])('answers %s with 404 Not Found, before any token check', async (path) => {
    const anonymous = await api.get(path);
    const withToken = await api.get(path, { token: 'all-of-10' });
    for (const res of [anonymous, withToken]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual(NOT_FOUND);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    }
  });

  it.each(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])(
    'answers %s on a route path with 404, before any token check',
    async (method) => {
      const res = await api.get('/api/acme/projects', { method });
      expect(res.status).toBe(404);
      expect(res.body).toEqual(NOT_FOUND);
    },
  );

  it('answers JSON whatever the Accept header asks for', async () => {
    for (const accept of ['text/html', 'application/xml', '*/*']) {
      for (const [path, token] of [
        ['/api/acme/projects', 'all-of-10'],
        ['/api/acme/projects', undefined],
        ['/nowhere', undefined],
      ] as const) {
        const res = await api.get(path, { token, headers: { Accept: accept } });
        expect(res.headers.get('content-type')).toMatch(/^application\/json(;|$)/);
        expect(() => JSON.parse(res.text)).not.toThrow();
      }
    }
  });

  it('addresses a team by its numeric id and by its slug alike', async () => {
    const byId = await api.get('/api/1/projects', { token: 'all-of-10' });
    const bySlug = await api.get('/api/acme/projects', { token: 'all-of-10' });
    expect(byId.status).toBe(200);
    expect(bySlug.status).toBe(200);
    expect(byId.body.data).toEqual(bySlug.body.data);
  });

  it('compares an id as written: 01 is not team 1', async () => {
    const res = await api.get('/api/01/projects', { token: 'all-of-10' });
    expect(res.status).toBe(404);
    expect(res.body).toEqual(NOT_FOUND);
  });
});

describe('1. token (401)', () => {
  it.each([
    ['no Authorization header', undefined],
    ['another scheme', 'Basic YWxsLTEwOg=='],
    ['a scheme without a token', 'Bearer'],
    ['a scheme with only spaces', 'Bearer    '],
    ['a token without a scheme', 'all-of-10'],
    ['an unknown token', 'Bearer not-a-token'],
    ['a token that differs by case', 'Bearer ALL-10'],
    ['an expired token', 'Bearer expired-10'],
    ['a revoked token', 'Bearer revoked-10'],
    ['two tokens', 'Bearer all-of-10 all-of-10'],
    ['a tab for the space', 'Bearer\tall-of-10'],
    ['a no-break space for the space', 'Bearer\u00a0all-of-10'],
  ])('rejects %s with 401 Unauthenticated. and WWW-Authenticate: Bearer', async (_, authorization) => {
    for (const { path } of ROUTES) {
      const res = await api.get(`/api/acme/${path}`, {
        headers: authorization === undefined ? {} : { Authorization: authorization },
      });
      expect(res.status).toBe(401);
      expect(res.body).toEqual(UNAUTHENTICATED);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    }
  });

  it.each(['bearer all-of-10', 'BEARER all-of-10', '  Bearer   all-of-10  '])(
    'accepts %j (scheme case-insensitive, spaces ignored)',
    async (authorization) => {
      const res = await api.get('/api/acme/projects', { headers: { Authorization: authorization } });
      expect(res.status).toBe(200);
    },
  );

  it('accepts a token whose expiry is in the future', async () => {
    expect((await api.get('/api/acme/projects', { token: 'future-10' })).status).toBe(200);
  });

  it('comes before the team check: an unknown team without a valid token is 401', async () => {
    const res = await api.get('/api/no-such-team/projects', { token: 'nope' });
    expect(res.status).toBe(401);
  });

  it('comes before the ability check: an expired token is 401, not 403', async () => {
    const res = await api.get('/api/acme/finances', { token: 'expired-10' });
    expect(res.status).toBe(401);
  });
});

describe('2. ability (403)', () => {
  it.each(ROUTES)('rejects a token without $ability on $path with the contract body', async ({ path, ability }) => {
    const res = await api.get(`/api/acme/${path}`, { token: 'none-of-10' });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      message: `This token does not have the ${ability} ability.`,
      code: 'insufficient_permission',
      missing_permissions: [ability],
    });
    expect(Object.keys(res.body)).toEqual(['message', 'code', 'missing_permissions']);
  });

  it('lets each ability open its own route and no other', async () => {
    for (const granted of ROUTES) {
      for (const route of ROUTES) {
        const res = await api.get(`/api/acme/${route.path}`, { token: `${granted.path}-10` });
        expect(res.status, `${granted.ability} on ${route.path}`).toBe(granted === route ? 200 : 403);
      }
    }
  });

  it('lets * open every route', async () => {
    for (const { path } of ROUTES)
      expect((await api.get(`/api/acme/${path}`, { token: 'all-of-10' })).status).toBe(200);
  });

  it('comes before the team check: a missing ability on an unknown team is 403', async () => {
    const res = await api.get('/api/no-such-team/projects', { token: 'daemons-10' });
    expect(res.status).toBe(403);
    expect(res.body.missing_permissions).toEqual(['projects:read']);
  });

  it('comes before the query check: a missing ability with per_page=51 is 403', async () => {
    const res = await api.get('/api/acme/projects?per_page=51', { token: 'daemons-10' });
    expect(res.status).toBe(403);
  });
});

describe('3. team (404)', () => {
  it.each([
    ['an unknown slug', '/api/no-such-team'],
    ['an unknown id', '/api/999'],
    ['a team the user is not a member of', '/api/globex'],
    ['the id of a team the user is not a member of', '/api/2'],
    ['a team with no members at all', '/api/initech'],
  ])('answers %s with the same 404 body', async (_, prefix) => {
    for (const { path } of ROUTES) {
      const res = await api.get(`${prefix}/${path}`, { token: 'all-of-10' });
      expect(res.status).toBe(404);
      expect(res.text).toBe('{"message":"Not Found"}');
    }
  });

  it('answers a user who is in no team with 404 everywhere', async () => {
    expect((await api.get('/api/acme/projects', { token: 'all-of-12' })).status).toBe(404);
  });

  it('lets a member of the other team in there, and only there', async () => {
    expect((await api.get('/api/globex/projects', { token: 'all-of-11' })).status).toBe(200);
    expect((await api.get('/api/acme/projects', { token: 'all-of-11' })).status).toBe(404);
  });

  it('comes before the query check: an unknown team with per_page=51 is 404', async () => {
    const res = await api.get('/api/no-such-team/projects?per_page=51', { token: 'all-of-10' });
    expect(res.status).toBe(404);
  });
});

describe('4. query (422) and 5. success', () => {
  it('validates the query only once token, ability and team pass', async () => {
    const res = await api.get('/api/acme/daemons?per_page=51', { token: 'all-of-10' });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      message: 'The per page field must not be greater than 50.',
      errors: { per_page: ['The per page field must not be greater than 50.'] },
    });
  });

  it('ignores any query on finances', async () => {
    const res = await api.get('/api/acme/finances?per_page=51&page=abc', { token: 'all-of-10' });
    expect(res.status).toBe(200);
  });
});
