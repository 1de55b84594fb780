import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument } from '../support/dynamodb.ts';
import { daemons, environment, server, snapshot, team, token, user } from '../support/snapshots.ts';

/** docs/contract.md, sections 3 and 4: resources, their order, the envelope, pagination and links. */
let api: TestApi;
let base: string;

// 45 projects with ids out of order and with gaps, so "ordered by id" is really tested.
const projectIds = Array.from({ length: 45 }, (_, i) => 5000 - i * 7);
const sortedIds = [...projectIds].sort((a, b) => a - b);

beforeAll(async () => {
  const table = await freshTable();
  await importDocument(
    table,
    snapshot({
      teams: [team(1, 'acme'), team(2, 'globex'), team(3, 'empty'), team(4, 'caf_e')],
      users: [user(10, [1, 3, 4])],
      tokens: [token(10, 'secret-token', ['*'])],
      environments: [environment(5, 1), environment(6, 2)],
      servers: [server(7, 1), server(8, 2)],
      clients: [{ id: 3, team_id: 1, name: 'Client A' }],
      projects: [
        ...projectIds.map((id) => ({
          id,
          team_id: 1,
          client_id: id === 5000 ? 3 : null,
          name: `Project ${id}`,
          slug: `project-${id}`,
          created_at: '2026-01-02T05:04:05.999+02:00',
        })),
        { id: 1, team_id: 4, name: 'Only', slug: 'only', created_at: '2026-03-01T00:00:00Z' },
      ],
      daemons: [
        // In acme's environment, on globex's server: acme's daemon.
        ...daemons(5, 8, 3, 100),
        // In globex's environment, on acme's server: not acme's daemon.
        ...daemons(6, 7, 2, 200),
      ],
    }),
  );
  api = await startApi(table);
  base = api.server.url;
});
afterAll(() => api.close());

const get = (path: string, headers?: Record<string, string>) => api.get(path, { token: 'secret-token', headers });

describe('resources (section 3)', () => {
  it('gives each project exactly its fields, in contract order', async () => {
    const { body } = await get('/api/acme/projects?per_page=50');
    const last = body.data.at(-1);
    expect(Object.keys(last)).toEqual(['id', 'name', 'slug', 'client_id', 'created_at']);
    expect(last).toEqual({
      id: 5000,
      name: 'Project 5000',
      slug: 'project-5000',
      client_id: 3,
      created_at: '2026-01-02T03:04:05+00:00',
    });
    expect(body.data[0].client_id).toBeNull();
  });

  it('gives created_at in UTC with the fraction of a second truncated, not rounded', async () => {
    const { body } = await get('/api/acme/projects?per_page=1');
    expect(body.data[0].created_at).toBe('2026-01-02T03:04:05+00:00');
  });

  it('gives each daemon exactly its fields, in contract order', async () => {
    const { body } = await get('/api/acme/daemons');
    expect(Object.keys(body.data[0])).toEqual([
      'id',
      'name',
      'command',
      'username',
      'directory',
      'processes',
      'environment_id',
      'server_id',
    ]);
    expect(body.data[0]).toEqual({
      id: 100,
      name: 'daemon-100',
      command: 'php artisan queue:work',
      username: 'forge',
      directory: '/home/forge/app',
      processes: 1,
      environment_id: 5,
      server_id: 8,
    });
  });

  it("lists the daemons of the team's environments, wherever their server is", async () => {
    const { body } = await get('/api/acme/daemons');
    expect(body.data.map((d: { id: number }) => d.id)).toEqual([100, 101, 102]);
    expect(body.meta.total).toBe(3);
  });

  it('orders every list by id ascending across all pages', async () => {
    const ids: number[] = [];
    let next: string | null = '/api/acme/projects?per_page=7';
    while (next) {
      const { body } = await get(next.replace(base, ''));
      ids.push(...body.data.map((p: { id: number }) => p.id));
      next = body.links.next;
    }
    expect(ids).toEqual(sortedIds);
  });
});

describe('the envelope (section 4)', () => {
  it('answers page 1 with the defaults: 20 per page, keys in contract order', async () => {
    const { status, body } = await get('/api/acme/projects');
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(['data', 'links', 'meta', 'results', 'served_in']);
    expect(Object.keys(body.links)).toEqual(['first', 'last', 'prev', 'next']);
    expect(Object.keys(body.meta)).toEqual(['current_page', 'from', 'last_page', 'per_page', 'to', 'total', 'path']);
    expect(body.data.map((p: { id: number }) => p.id)).toEqual(sortedIds.slice(0, 20));
    expect(body.meta).toEqual({
      current_page: 1,
      from: 1,
      last_page: 3,
      per_page: 20,
      to: 20,
      total: 45,
      path: `${base}/api/acme/projects`,
    });
    expect(body.links).toEqual({
      first: `${base}/api/acme/projects?page=1`,
      last: `${base}/api/acme/projects?page=3`,
      prev: null,
      next: `${base}/api/acme/projects?page=2`,
    });
    expect(body.results).toBe(20);
    expect(body.served_in).toMatch(/^\d+(\.\d{1,2})?ms$/);
  });

  it('answers a middle page with prev and next', async () => {
    const { body } = await get('/api/acme/projects?page=2');
    expect(body.meta).toMatchObject({ current_page: 2, from: 21, to: 40 });
    expect(body.links.prev).toBe(`${base}/api/acme/projects?page=1`);
    expect(body.links.next).toBe(`${base}/api/acme/projects?page=3`);
    expect(body.data.map((p: { id: number }) => p.id)).toEqual(sortedIds.slice(20, 40));
  });

  it('answers the last page partly filled, with next null', async () => {
    const { body } = await get('/api/acme/projects?page=3');
    expect(body.results).toBe(5);
    expect(body.meta).toMatchObject({ current_page: 3, from: 41, to: 45, last_page: 3, total: 45 });
    expect(body.links.next).toBeNull();
    expect(body.links.prev).toBe(`${base}/api/acme/projects?page=2`);
  });

  it('answers a page past the last with 200, empty data, from/to null, next null and prev the page before', async () => {
    const { status, body } = await get('/api/acme/projects?page=9');
    expect(status).toBe(200);
    expect(body.data).toEqual([]);
    expect(body.results).toBe(0);
    expect(body.meta).toEqual({
      current_page: 9,
      from: null,
      last_page: 3,
      per_page: 20,
      to: null,
      total: 45,
      path: `${base}/api/acme/projects`,
    });
    expect(body.links).toEqual({
      first: `${base}/api/acme/projects?page=1`,
      last: `${base}/api/acme/projects?page=3`,
      prev: `${base}/api/acme/projects?page=8`,
      next: null,
    });
  });

  it('echoes the largest page a JSON number carries exactly', async () => {
    const { status, body } = await get('/api/acme/projects?page=9007199254740991');
    expect(status).toBe(200);
    expect(body.meta.current_page).toBe(9007199254740991);
    expect(body.links.prev).toBe(`${base}/api/acme/projects?page=9007199254740990`);
  });

  it('answers an empty team with one empty page', async () => {
    const { body } = await get('/api/empty/projects');
    expect(body.data).toEqual([]);
    expect(body.meta).toEqual({
      current_page: 1,
      from: null,
      last_page: 1,
      per_page: 20,
      to: null,
      total: 0,
      path: `${base}/api/empty/projects`,
    });
    expect(body.links).toEqual({
      first: `${base}/api/empty/projects?page=1`,
      last: `${base}/api/empty/projects?page=1`,
      prev: null,
      next: null,
    });
  });

  it('carries per_page in every link, before page, when the request gave it', async () => {
    const { body } = await get('/api/acme/projects?page=2&per_page=10');
    expect(body.links).toEqual({
      first: `${base}/api/acme/projects?per_page=10&page=1`,
      last: `${base}/api/acme/projects?per_page=10&page=5`,
      prev: `${base}/api/acme/projects?per_page=10&page=1`,
      next: `${base}/api/acme/projects?per_page=10&page=3`,
    });
    expect(body.meta).toMatchObject({ per_page: 10, last_page: 5, from: 11, to: 20 });
  });

  it("takes per_page=50 as the maximum, and integers as Laravel's rule reads them, links carrying the integer read", async () => {
    expect((await get('/api/acme/projects?per_page=50')).body.results).toBe(45);
    // "+5" and " 2" (a + in a query is a space) are integers to PHP's filter_var (section 4).
    const { body } = await get('/api/acme/projects?per_page=%2B5&page=+2');
    expect(body.meta).toMatchObject({ per_page: 5, current_page: 2, from: 6, to: 10 });
    expect(body.links.next).toBe(`${base}/api/acme/projects?per_page=5&page=3`);
  });

  it('ignores other query parameters', async () => {
    const { status, body } = await get('/api/acme/projects?sort=-id&filter[x]=1&page=1');
    expect(status).toBe(200);
    expect(body.data[0].id).toBe(sortedIds[0]);
    expect(body.links.next).toBe(`${base}/api/acme/projects?page=2`);
  });

  it('repeats the team segment as the request gave it: by id, and percent-encoded', async () => {
    expect((await get('/api/1/projects')).body.meta.path).toBe(`${base}/api/1/projects`);
    // Team slugs are ASCII letters, digits, - and _ (docs/contract.md, section 7): their percent-encoded
    // form is the slug itself, even when a client escapes a character that needs no escaping.
    // API Gateway's HTTP API hands the function the path decoded (docs/api.md, "Links"), so the form
    // a client chose for a character that needs no escape cannot be repeated; the local server does the same.
    const { status, body } = await get('/api/caf%5Fe/projects');
    expect(status).toBe(200);
    expect(body.meta.path).toBe(`${base}/api/caf_e/projects`);
    expect(body.links.first).toBe(`${base}/api/caf_e/projects?page=1`);
    expect((await get('/api/%61cme/projects')).body.meta.path).toBe(`${base}/api/acme/projects`);
  });

  it('builds links from the scheme API Gateway forwards and the Host header', async () => {
    const { body } = await get('/api/acme/daemons', { 'X-Forwarded-Proto': 'https', Host: 'api.example.test' });
    expect(body.meta.path).toBe('https://api.example.test/api/acme/daemons');
    expect(body.links.first).toBe('https://api.example.test/api/acme/daemons?page=1');
  });

  it('paginates daemons the same way', async () => {
    const { body } = await get('/api/acme/daemons?per_page=2&page=2');
    expect(body.data.map((d: { id: number }) => d.id)).toEqual([102]);
    expect(body.meta).toEqual({
      current_page: 2,
      from: 3,
      last_page: 2,
      per_page: 2,
      to: 3,
      total: 3,
      path: `${base}/api/acme/daemons`,
    });
  });
});

describe('query validation (section 4, 422)', () => {
  const cases: [string, string, Record<string, string[]>][] = [
    [
      'per_page=51',
      'The per page field must not be greater than 50.',
      { per_page: ['The per page field must not be greater than 50.'] },
    ],
    ['per_page=0', 'The per page field must be at least 1.', { per_page: ['The per page field must be at least 1.'] }],
    [
      'per_page=abc',
      'The per page field must be an integer.',
      { per_page: ['The per page field must be an integer.'] },
    ],
    ['per_page=', 'The per page field must be an integer.', { per_page: ['The per page field must be an integer.'] }],
    [
      'per_page=1.5',
      'The per page field must be an integer.',
      { per_page: ['The per page field must be an integer.'] },
    ],
    ['per_page=-1', 'The per page field must be at least 1.', { per_page: ['The per page field must be at least 1.'] }],
    [
      'per_page=020',
      'The per page field must be an integer.',
      { per_page: ['The per page field must be an integer.'] },
    ],
    [
      'per_page=1e1',
      'The per page field must be an integer.',
      { per_page: ['The per page field must be an integer.'] },
    ],
    [
      'per_page=10&per_page=20',
      'The per page field must be an integer.',
      { per_page: ['The per page field must be an integer.'] },
    ],
    ['page=0', 'The page field must be at least 1.', { page: ['The page field must be at least 1.'] }],
    ['page=x', 'The page field must be an integer.', { page: ['The page field must be an integer.'] }],
    ['page=1&page=2', 'The page field must be an integer.', { page: ['The page field must be an integer.'] }],
    [
      'page=9007199254740992',
      'The page field must not be greater than 9007199254740991.',
      { page: ['The page field must not be greater than 9007199254740991.'] },
    ],
    [
      'page=9223372036854775807',
      'The page field must not be greater than 9007199254740991.',
      { page: ['The page field must not be greater than 9007199254740991.'] },
    ],
    [
      'page=99999999999999999999999',
      'The page field must be an integer.',
      { page: ['The page field must be an integer.'] },
    ],
    [
      'page=0&per_page=51',
      'The per page field must not be greater than 50. (and 1 more error)',
      { per_page: ['The per page field must not be greater than 50.'], page: ['The page field must be at least 1.'] },
    ],
  ];

  it.each(cases)("rejects ?%s with 422 and Laravel's body", async (query, message, errors) => {
    for (const list of ['projects', 'daemons']) {
      const res = await get(`/api/acme/${list}?${query}`);
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ message, errors });
      expect(Object.keys(res.body.errors)).toEqual(Object.keys(errors));
    }
  });
});
