import { beforeAll, describe, expect, it } from 'vitest';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { countedFunctions } from '../support/read-cost.ts';
import { projects, server, snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * docs/storage.md guarantee 1, at size: a list costs what a small team's costs at any depth of any
 * team size, its head holding no members and no finance; a team's 300 cost lines are paid for on its
 * finances only. Counted as read-cost.test.ts counts (test/support/read-cost.ts). Its point is the
 * team's size (5,000 members, imported in over a minute on 2 cores): it runs in the `at-size` project
 * (vitest.config.ts), a file alone.
 */
let table: TestTable;

beforeAll(async () => {
  process.env.LOG_LEVEL = 'SILENT';
  // As read-cost.test.ts's table: a team of 1,000 projects.
  table = await freshTable();
  await importDocument(
    table,
    snapshot({
      teams: [team(1, 'big')],
      users: [user(10, [1])],
      tokens: [token(10, 'secret-token')],
      servers: [server(7, 1, '10.00')],
      projects: projects(1, 1_000),
    }),
  );
}, 120_000);

const functions = (tableName: string) => countedFunctions(table.endpoint, tableName);

describe('a team with 5,000 members and 300 cost lines', () => {
  const MEMBERS = 5_000;
  let large: TestTable;

  beforeAll(async () => {
    large = await freshTable();
    const costs = Array.from({ length: 300 }, (_, i) => ({
      team_id: 2,
      label: `Cost line ${String(i).padStart(3, '0')}`,
      amount: '12.3456',
      currency: 'EUR',
    }));
    await importDocument(
      large,
      snapshot({
        teams: [team(1, 'big'), team(2, 'crowd')],
        users: [user(10, [1, 2]), ...Array.from({ length: MEMBERS - 1 }, (_, i) => user(1_000 + i, [2]))],
        tokens: [token(10, 'secret-token')],
        projects: [...projects(1, 100), ...projects(2, 100)],
        costs,
      }),
    );
  }, 120_000);

  it("costs a list what a small team's costs, at any depth of any team size: the head holds no members and no finance", async () => {
    // The first table's team of 1,000 projects, this one's small team and crowd; first sight, then warm.
    const pages = [
      [table, '/api/big/projects?page=1'],
      [table, '/api/big/projects?page=25'],
      [table, '/api/big/projects?page=50'],
      [large, '/api/big/projects?page=5'],
      [large, '/api/crowd/projects?page=1'],
      [large, '/api/crowd/projects?page=5'],
    ] as const;
    for (const [own, target] of pages) {
      const request = functions(own.tableName);
      const first = await request(target, { token: 'secret-token' });
      const warm = await request(target, { token: 'secret-token' });
      expect([target, first.status, first.rcu, first.roundTrips, warm.rcu, warm.roundTrips]).toEqual([
        target,
        200,
        1.5,
        2,
        1.5,
        1,
      ]);
    }
  });

  it('pays for its 300 lines on finances only', async () => {
    const request = functions(large.tableName);
    const r = await request('/api/crowd/finances', { token: 'secret-token' });
    expect(r.status).toBe(200);
    expect(r.body.results).toBe(300);
    expect(r.roundTrips).toBe(1);
    expect(r.rcu).toBeGreaterThan(1);
  });
});
