import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { type RunningSync, servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * The sync right after a transaction of 10,000 rows of one team (docs/contract.md, section 9: every
 * change served within 10 s, "At any size"; docs/sync.md, a team written apart): another team's
 * change is not held behind it, and the team's own changes made meanwhile are each served, none lost.
 * Its point is the transaction's size: it runs in the `at-size` project (vitest.config.ts), a file
 * alone, beside the cases of sync-transactions.test.ts whose transactions are small.
 */
const ADA = 'attack-ada-token-00001';

describeSources('the sync after a big transaction', (engine) => {
  let db: SourceDatabase;
  let table: TestTable;
  let api: ReturnType<typeof tableApi>;
  let sync: RunningSync;
  const now = engine === 'postgres' ? 'now()' : 'NOW()';

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, {
      teams: [
        { id: 1, slug: 'big', name: 'Big', user_id: 10 },
        { id: 2, slug: 'small', name: 'Small', user_id: 10 },
      ],
      users: [{ id: 10, name: 'Ada' }],
      tokens: [{ id: 70, user_id: 10, token: ADA, abilities: ['*'] }],
      costs: [{ team_id: 2, label: 'Backups', amount: '1.00', currency: 'EUR' }],
    });
    await setUp(db);
    table = await freshTable();
    api = tableApi(table);
    sync = startSync(db, table);
    await servedWithin(async () => (await api.get('/api/small/finances', { token: ADA })).status === 200, 30_000);
  }, 90_000);
  afterAll(async () => {
    await sync?.stop();
    await db?.drop();
  });

  it('serves a small change of another team within 10 s of its commit, right after a 10,000-row transaction', async () => {
    const session = await db.session();
    try {
      await session.query(engine === 'postgres' ? 'BEGIN' : 'START TRANSACTION');
      // 10,000 rows of one team: written apart (docs/sync.md), the change of the other waits only for their read.
      for (let start = 0; start < 10_000; start += 1_000) {
        const rows = Array.from(
          { length: 1_000 },
          (_, i) => `(${start + i + 1}, 1, 'P ${start + i + 1}', 'p${start + i + 1}', ${now}, ${now})`,
        );
        await session.query(
          `INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES ${rows.join(', ')}`,
        );
      }
      await session.query('COMMIT');
    } finally {
      await session.close();
    }
    await db.query(`UPDATE costs SET amount = 2 WHERE team_id = 2`);
    const ms = await servedWithin(
      async () => (await api.get('/api/small/finances', { token: ADA })).body?.totals?.EUR === 2,
      60_000,
    );
    console.log(`${engine}: the small change was served ${(ms / 1000).toFixed(2)} s after its commit`);
    expect(ms).toBeLessThan(10_000);
  }, 120_000);

  it('serves every change to a team committed while its 10,000 rows are written apart, none lost', async () => {
    const [{ count } = { count: 0 }] = await db.query<{ count: number }>(
      'SELECT COUNT(*) AS count FROM projects WHERE team_id = 1',
    );
    const rows = Array.from(
      { length: 10_000 },
      (_, i) => `(${20_001 + i}, 1, 'Q ${20_001 + i}', 'q${20_001 + i}', ${now}, ${now})`,
    );
    await db.query(`INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES ${rows.join(', ')}`);
    // Each rename its own batch while the team is written apart: each waits, none in place of another.
    for (const id of [1, 2, 3]) {
      const batches = sync.batches;
      await db.query(`UPDATE projects SET name = 'Renamed ${id}' WHERE id = ${id}`);
      await servedWithin(async () => sync.batches > batches, 30_000);
    }
    const names = async () => {
      const { body } = await api.get('/api/big/projects?per_page=3', { token: ADA });
      return { total: body?.meta?.total, names: body?.data?.map((p: { name: string }) => p.name) };
    };
    await servedWithin(async () => (await names()).total === Number(count) + 10_000, 60_000);
    await servedWithin(async () => (await names()).names?.join() === 'Renamed 1,Renamed 2,Renamed 3', 10_000);
  }, 120_000);
});
