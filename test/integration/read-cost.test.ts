import { beforeAll, describe, expect, it } from 'vitest';
import { revoke } from '../../commands/tokens/tokens.ts';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { type Counted, countedFunctions } from '../support/read-cost.ts';
import { projects, server, snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * docs/storage.md guarantee 1, counted: what each request asks of DynamoDB, through the real handler
 * chain, at the client's own middleware stack (every call, and which were in flight together:
 * test/support/calls.ts) and with DynamoDB Local's ConsumedCapacity for each (test/support/read-cost.ts).
 * A handler made by a test is one warm function: what it remembers between requests is its own.
 * A team of 5,000 members and 300 cost lines is read-cost-at-size.test.ts, in the `at-size` project.
 */
const TEAM_SIZE = 1_000;
let table: TestTable;

const data = (count: number, firstId?: number) =>
  snapshot({
    teams: [team(1, 'big')],
    users: [user(10, [1]), user(11, [])],
    tokens: [
      token(10, 'secret-token'),
      token(10, 'to-revoke'),
      token(10, 'daemons-only', ['daemons:read']),
      token(11, 'outsider'),
    ],
    servers: [server(7, 1, '10.00')],
    projects: projects(1, count, firstId),
  });

beforeAll(async () => {
  process.env.LOG_LEVEL = 'SILENT';
  table = await freshTable();
  await importDocument(table, data(TEAM_SIZE));
}, 120_000);

/** A warm function of each kind against the test table (or another), every DynamoDB call counted. */
const functions = (tableName = table.tableName) => countedFunctions(table.endpoint, tableName);

const operations = (r: Counted) => r.calls.map((c) => c.operation);
const ids = (r: Counted) => (r.body.data as { id: number }[]).map((p) => p.id);
const idsFrom = (first: number, count: number) => Array.from({ length: count }, (_, i) => first + i);

describe('a list request', () => {
  it('waits on two round trips at first sight of a token, eventually consistent, 1.5 RCU for 20 projects', async () => {
    const request = functions();
    const r = await request('/api/big/projects', { token: 'secret-token' });
    expect(r.status).toBe(200);
    expect(ids(r)).toEqual(idsFrom(100_001, 20));
    expect(operations(r)).toEqual(['BatchGetItem', 'Query']);
    expect(r.roundTrips).toBe(2);
    expect(r.calls.map((c) => c.consistent)).toEqual([false, false]);
    expect(r.calls.map((c) => c.readCapacity)).toEqual([1, 0.5]);
    expect(r.rcu).toBe(1.5);
  });

  it('waits on one round trip when the function recently saw the token valid: the page Query goes with the token read', async () => {
    const request = functions();
    await request('/api/big/projects?page=7', { token: 'secret-token' });
    const r = await request('/api/big/projects?page=8', { token: 'secret-token' });
    expect(r.status).toBe(200);
    expect(ids(r)).toEqual(idsFrom(100_001 + 7 * 20, 20));
    expect(operations(r).sort()).toEqual(['BatchGetItem', 'Query']);
    expect(r.roundTrips).toBe(1);
    expect(r.rcu).toBe(1.5);
  });

  it('reads a page of 50 for at most 2.5 RCU, page 1 and the last page alike', async () => {
    const request = functions();
    const first = await request('/api/big/projects?per_page=50', { token: 'secret-token' });
    const last = await request(`/api/big/projects?per_page=50&page=${TEAM_SIZE / 50}`, { token: 'secret-token' });
    expect(ids(first)).toEqual(idsFrom(100_001, 50));
    expect(ids(last)).toEqual(idsFrom(100_001 + TEAM_SIZE - 50, 50));
    expect(first.rcu).toBeLessThanOrEqual(2.5);
    expect(last.rcu).toBe(first.rcu);
    expect(last.roundTrips).toBe(1);
  });

  it('answers a page past the last without a Query, warm or not', async () => {
    const request = functions();
    for (let i = 0; i < 2; i++) {
      const r = await request(`/api/big/projects?page=${TEAM_SIZE}`, { token: 'secret-token' });
      expect(r.status).toBe(200);
      expect(r.body.data).toEqual([]);
      expect(operations(r)).toEqual(['BatchGetItem']);
    }
  });

  it('never sends a Query for an unknown token, even for a team a valid token just read', async () => {
    const request = functions();
    await request('/api/big/projects', { token: 'secret-token' });
    for (let i = 0; i < 3; i++) {
      const r = await request('/api/big/projects', { token: `unknown-${i % 2}` });
      expect(r.status).toBe(401);
      expect(operations(r)).toEqual(['BatchGetItem']);
      expect(r.roundTrips).toBe(1);
    }
  });

  it('never sends a Query for a token without the ability, nor keeps speculating for one that lost it', async () => {
    const request = functions();
    const r = await request('/api/big/projects', { token: 'daemons-only' });
    expect(r.status).toBe(403);
    expect(operations(r)).toEqual(['BatchGetItem']);
  });

  it('refuses a token revoked after the function remembered it, on the very next request, and speculates for it no more', async () => {
    const request = functions();
    expect((await request('/api/big/projects', { token: 'to-revoke' })).status).toBe(200);
    await revoke(table.doc, table.tableName, { secret: 'to-revoke' });
    const refused = await request('/api/big/projects', { token: 'to-revoke' });
    expect(refused.status).toBe(401);
    // The speculative Query was already on its way with the token's read: it is wasted, not used.
    expect(operations(refused).sort()).toEqual(['BatchGetItem', 'Query']);
    const again = await request('/api/big/projects', { token: 'to-revoke' });
    expect(again.status).toBe(401);
    expect(operations(again)).toEqual(['BatchGetItem']);
  });

  it('answers the new state right after an import, for one more Query (the speculation aimed at the old generation)', async () => {
    const own = await freshTable();
    await importDocument(own, data(40));
    const request = functions(own.tableName);
    const before = await request('/api/big/projects?page=2', { token: 'secret-token' });
    expect(before.body.meta.total).toBe(40);
    await importDocument(own, data(45, 200_001));
    const after = await request('/api/big/projects?page=2', { token: 'secret-token' });
    expect(after.status).toBe(200);
    expect(after.body.meta.total).toBe(45);
    expect(ids(after)).toEqual(idsFrom(200_021, 20));
    expect(operations(after)).toEqual(expect.arrayContaining(['BatchGetItem', 'Query', 'Query']));
    expect(operations(after)).toHaveLength(3);
    expect(after.roundTrips).toBe(2);
    // And from then on one round trip again, on the new generation.
    const next = await request('/api/big/projects?page=3', { token: 'secret-token' });
    expect(ids(next)).toEqual(idsFrom(200_041, 5));
    expect(next.roundTrips).toBe(1);
    expect(next.calls).toHaveLength(2);
  });

  it('confirms a 404 for a valid token on one strongly consistent read (replicas may lag an import), never with a Query', async () => {
    const request = functions();
    const r = await request('/api/big/projects', { token: 'outsider' });
    expect(r.status).toBe(404);
    expect(operations(r)).toEqual(['BatchGetItem', 'BatchGetItem']);
    expect(r.calls.map((c) => c.consistent)).toEqual([false, true]);
    // DynamoDB Local bills as DynamoDB does: the token and the head at 0.5 RCU each eventually
    // consistent, 1 RCU each strongly consistent.
    expect(r.calls.map((c) => c.readCapacity)).toEqual([1, 2]);
  });
});

describe('revalidation', () => {
  it('answers a matching If-None-Match with 304 after one round trip and no Query', async () => {
    const request = functions();
    const first = await request('/api/big/projects?page=3', { token: 'secret-token' });
    const again = await request('/api/big/projects?page=3', { token: 'secret-token', ifNoneMatch: first.headers.ETag });
    expect(again.status).toBe(304);
    expect(again.headers.ETag).toBe(first.headers.ETag);
    expect(operations(again)).toEqual(['BatchGetItem']);
    expect(again.roundTrips).toBe(1);
    expect(again.rcu).toBe(1);
  });

  it('answers a stale If-None-Match with the page, in two round trips (no speculation on a revalidation)', async () => {
    const request = functions();
    await request('/api/big/projects', { token: 'secret-token' });
    const r = await request('/api/big/projects', { token: 'secret-token', ifNoneMatch: '"stale"' });
    expect(r.status).toBe(200);
    expect(operations(r)).toEqual(['BatchGetItem', 'Query']);
    expect(r.roundTrips).toBe(2);
  });

  it('gives every page, per_page, address and generation its own tag, and the same request the same tag', async () => {
    const own = await freshTable();
    await importDocument(own, data(100));
    const request = functions(own.tableName);
    const tag = async (target: string, host?: string) =>
      (await request(target, { token: 'secret-token', host })).headers.ETag;
    const base = await tag('/api/big/projects?page=2');
    expect(await tag('/api/big/projects?page=2')).toBe(base);
    expect(await tag('/api/big/projects?page=%2B2')).toBe(base); // the same page (+2 is 2), the same bytes
    const others = [
      await tag('/api/big/projects?page=3'),
      await tag('/api/big/projects?page=2&per_page=20'), // the same items, but links carry per_page
      await tag('/api/big/projects?page=2&per_page=10'),
      await tag('/api/1/projects?page=2'), // the same team by id: meta.path differs
      await tag('/api/big/projects?page=2', 'other.example.com'),
    ];
    expect(new Set([base, ...others]).size).toBe(others.length + 1);
    await importDocument(own, data(100));
    expect(await tag('/api/big/projects?page=2')).toBe(base); // the same projects again: the same generation
    await importDocument(own, data(100, 5_000));
    expect(await tag('/api/big/projects?page=2')).not.toBe(base);
  });
});

describe('finances', () => {
  it('read the token and the finance item only: one round trip, 1 RCU; a matching If-None-Match the same, 304', async () => {
    const request = functions();
    const r = await request('/api/big/finances', { token: 'secret-token' });
    expect(r.status).toBe(200);
    expect(operations(r)).toEqual(['BatchGetItem']);
    expect(r.calls[0]!.consistent).toBe(false);
    expect(r.calls[0]!.items).toBe(2);
    expect(r.roundTrips).toBe(1);
    expect(r.rcu).toBe(1);
    const again = await request('/api/big/finances', { token: 'secret-token', ifNoneMatch: r.headers.ETag });
    expect(again.status).toBe(304);
    expect(operations(again)).toEqual(['BatchGetItem']);
    expect(again.roundTrips).toBe(1);
    expect(again.rcu).toBe(1);
  });
});
