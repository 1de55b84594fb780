import { beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../shared/auth/token.ts';
import { pageWindow } from '../../shared/domain/pagination.ts';
import { TeamReader, type CallReport } from '../../shared/store/team-reader.ts';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { projects, snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * storage.md guarantee 1: a page costs the same whatever its number; a list waits on two
 * round trips, finances on one. Measured with DynamoDB Local's ConsumedCapacity.
 */
const TEAM_SIZE = 3_000;
let table: TestTable;

beforeAll(async () => {
  table = await freshTable();
  await importDocument(table, snapshot({ teams: [team(1, 'big')], users: [user(10, [1])], tokens: [token(10, 'secret-token')], projects: projects(1, TEAM_SIZE) }));
}, 120_000);

/** Does what the projects function does for one request, recording every DynamoDB call. */
async function listRequest(page: number, perPage = 50) {
  const calls: CallReport[] = [];
  const reader = new TeamReader(table.client, { tableName: table.tableName, observe: (call) => calls.push(call) });
  const { head } = await reader.readAccess(hashToken('secret-token'), 'big');
  const window = pageWindow(head!.counts.projects, page, perPage);
  const items = window.ordinals ? await reader.readPage(head!, 'projects', window.ordinals.first, window.ordinals.last) : [];
  return { calls, items: items.map((json) => JSON.parse(json) as { id: number }) };
}

describe('read cost', () => {
  it('reads page 1 with one BatchGetItem and one Query of exactly per_page items', async () => {
    const { calls, items } = await listRequest(1);
    expect(calls.map((c) => c.operation)).toEqual(['BatchGetItem', 'Query']);
    expect(calls[1]!.items).toBe(50);
    expect(items.map((p) => p.id)).toEqual(Array.from({ length: 50 }, (_, i) => 100_001 + i));
  });

  it('reads the last page with the same calls and the same read capacity as page 1', async () => {
    const first = await listRequest(1);
    const last = await listRequest(TEAM_SIZE / 50);
    expect(last.calls.map((c) => c.operation)).toEqual(['BatchGetItem', 'Query']);
    expect(last.items.map((p) => p.id)).toEqual(Array.from({ length: 50 }, (_, i) => 100_001 + TEAM_SIZE - 50 + i));
    const capacity = (r: typeof first) => r.calls.reduce((sum, c) => sum + c.readCapacity, 0);
    expect(capacity(first)).toBeGreaterThan(0);
    expect(capacity(last)).toBe(capacity(first));
    // Far below reading the team: 3,000 items of ~150 bytes are ~110 read units.
    expect(capacity(last)).toBeLessThan(5);
  });

  it('answers a page past the last without a second round trip', async () => {
    const { calls, items } = await listRequest(TEAM_SIZE);
    expect(calls.map((c) => c.operation)).toEqual(['BatchGetItem']);
    expect(items).toEqual([]);
  });

  it('reads the token and the team head in the same single call', async () => {
    const calls: CallReport[] = [];
    const reader = new TeamReader(table.client, { tableName: table.tableName, observe: (call) => calls.push(call) });
    const access = await reader.readAccess(hashToken('secret-token'), 'big');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.items).toBe(2);
    expect(access.token?.userId).toBe(10);
    expect(access.head?.counts.projects).toBe(TEAM_SIZE);
  });
});
