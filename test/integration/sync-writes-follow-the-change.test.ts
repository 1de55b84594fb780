import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { type RunningSync, servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';
import { countedTable, type WriteCount } from '../support/writes.ts';

/**
 * "Writes follow the change, not the data" (docs/contract.md, section 9), where it is the sync's own:
 * what its front end reads for a change, and how it batches changes. Counted at the sync's own client
 * middleware stack (test/support/writes.ts), on both engines, for a team of 500 projects beside another
 * team: updates that change nothing it serves write nothing (its lease aside); a client deleted, whose
 * projects are read again whole, writes only the project that named it; many changes to one team
 * committed together switch its list once. What each kind of change costs the writers, whichever front
 * end gives it, is write-cost.test.ts's table.
 */
const PROJECTS = 500;
const SECRET = 'writes-secret-token-01';

describeSources('the sync writes what a change changes', (engine) => {
  let db: SourceDatabase;
  let table: TestTable;
  let counted: ReturnType<typeof countedTable>;
  let api: ReturnType<typeof tableApi>;
  let sync: RunningSync;
  const now = engine === 'postgres' ? 'now()' : 'NOW()';

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, {
      teams: [
        { id: 1, slug: 'big', name: 'Big', user_id: 10 },
        { id: 2, slug: 'bystander', name: 'Bystander', user_id: 11 },
      ],
      users: [
        { id: 10, name: 'Ada', teams: [1] },
        { id: 11, name: 'Bob', teams: [2] },
      ],
      tokens: [{ id: 70, user_id: 10, token: SECRET, abilities: ['*'] }],
      environments: [
        { id: 5, team_id: 1, name: 'production' },
        { id: 6, team_id: 2, name: 'production' },
      ],
      servers: [
        { id: 7, team_id: 1, name: 'web-1', monthly_cost: '24.15', currency: 'EUR' },
        { id: 8, team_id: 2, name: 'web-2', monthly_cost: '5.00', currency: 'EUR' },
      ],
      clients: [{ id: 3, team_id: 1, name: 'Client A' }],
      projects: [
        ...Array.from({ length: PROJECTS }, (_, i) => ({
          id: 1_000 + i,
          team_id: 1,
          client_id: i === 0 ? 3 : null,
          name: `Project ${i}`,
          slug: `project-${i}`,
          created_at: '2026-01-02T03:04:05Z',
        })),
        { id: 9_000, team_id: 2, name: 'Theirs', slug: 'theirs', created_at: '2026-01-02T03:04:05Z' },
      ],
      daemons: [
        {
          id: 500,
          environment_id: 6,
          server_id: 8,
          name: 'theirs',
          command: 'x',
          username: 'forge',
          directory: '/',
          processes: 1,
        },
      ],
      costs: [
        { team_id: 1, label: 'Backups', amount: '5.00', currency: 'EUR' },
        { team_id: 2, label: 'Backups', amount: '1.00', currency: 'EUR' },
      ],
    });
    await setUp(db);
    table = await freshTable();
    counted = countedTable(table);
    api = tableApi(table);
    sync = startSync(db, counted.table);
    await servedWithin(async () => (await api.get('/api/big/projects', { token: SECRET })).status === 200, 30_000);
    // The first full pass goes on after the team answers (its token step).
    await servedWithin(async () => sync.ready, 30_000);
  }, 90_000);
  afterAll(async () => {
    await sync?.stop();
    await db?.drop();
  });

  /**
   * The items the sync writes for a change committed in one transaction, once the batch that applied
   * it is over (each case starts once the one before it is over).
   */
  async function writesFor(change: () => Promise<unknown>, served: () => Promise<boolean>): Promise<WriteCount> {
    const count = counted.restart();
    const applied = sync.nextBatch();
    await change();
    await applied;
    await servedWithin(served);
    return count;
  }
  const bystander = (count: WriteCount) =>
    count.keys.filter((key) => /^(TEAMREF#(2|bystander) |TEAM#2#|TEAMS 0*2$)/.test(key));

  it('writes nothing for updates that change nothing it serves (its lease aside)', async () => {
    const count = await writesFor(
      async () => {
        // One transaction: every project of the big team updated to the values it has, Sanctum's save
        // on a request (last_used_at, and the updated_at it writes with it), and one change of the
        // other team's cost line, whose batch is then the one that read the two others.
        const session = await db.session();
        try {
          await session.query(engine === 'postgres' ? 'BEGIN' : 'START TRANSACTION');
          await session.query('UPDATE projects SET name = name, slug = slug WHERE team_id = 1');
          await session.query(
            `UPDATE personal_access_tokens SET last_used_at = ${now}, updated_at = ${now} WHERE id = 70`,
          );
          await session.query('UPDATE costs SET amount = 2 WHERE team_id = 2');
          await session.query('COMMIT');
        } finally {
          await session.close();
        }
      },
      async () => true,
    );
    expect(count.of('finance'), JSON.stringify(count.keys)).toBe(2);
    expect(count.keys.filter((key) => !/^(TEAMREF#(2|bystander) |LOCK#2 |SYNC )/.test(key))).toEqual([]);
  });

  it('writes only the project that named a client deleted, whose projects it reads again whole', async () => {
    // The client's projects are read again whole (ON DELETE SET NULL is no change of a project's own
    // row on MySQL's log): only the one that named it changed.
    const deleted = await writesFor(
      () => db.query('DELETE FROM clients WHERE id = 3'),
      async () => (await api.get('/api/big/projects?per_page=1', { token: SECRET })).body.data[0].client_id === null,
    );
    expect(deleted.of('daemon', 'finance')).toBe(0);
    expect(deleted.of('project'), JSON.stringify(deleted.keys)).toBe(1);
    expect(deleted.data, JSON.stringify(deleted.keys)).toBeLessThanOrEqual(10);
    expect(bystander(deleted)).toEqual([]);
  });

  it('applies many changes to one team committed close together in one batch: its list switches once', async () => {
    const batches = sync.batches;
    const metrics = sync.metrics.length;
    const session = await db.session();
    const count = counted.restart();
    try {
      await session.query(engine === 'postgres' ? 'BEGIN' : 'START TRANSACTION');
      for (let i = 0; i < 20; i++) {
        await session.query(`UPDATE projects SET name = 'Batch ${i}' WHERE id = ${1_100 + i}`);
      }
      await session.query('COMMIT');
    } finally {
      await session.close();
    }
    await servedWithin(
      async () =>
        sync.batches > batches &&
        (await api.get('/api/big/projects?per_page=1&page=120', { token: SECRET })).body.data[0].name === 'Batch 19',
    );
    // One batch for the twenty changes: each project written once, the list's heads (by id and by
    // slug) switched once.
    const applied = sync.metrics.slice(metrics).filter((metric) => metric.SyncChangesApplied! > 0);
    expect(applied.map((metric) => metric.SyncChangesApplied)).toEqual([20]);
    expect(count.of('project'), JSON.stringify(count.keys)).toBe(20);
    expect(count.of('head'), JSON.stringify(count.keys)).toBe(2);
  });
});
