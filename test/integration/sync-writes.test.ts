import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { type RunningSync, servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';
import { countedTable, type WriteCount } from '../support/writes.ts';

/**
 * "Writes follow the change, not the data" (docs/contract.md, section 9), counted at the sync's
 * own client middleware stack (test/support/writes.ts) for a team of 500 projects and 120
 * daemons beside another team: nothing changed, nothing written (the sync's lease aside); each
 * kind of change writes its part and nothing of the team's other parts, nor of another team; a list
 * changes by the item ("at any size": one project or daemon changed writes at most 10 items).
 */
const PROJECTS = 500;
const SECRET = 'writes-secret-token-01';
const OTHER = 'other-user-secret-0002';

describeSources('what a change costs the sync', (engine) => {
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
        { id: 12, name: 'Cy', teams: [] },
      ],
      tokens: [
        { id: 70, user_id: 10, token: SECRET, abilities: ['*'] },
        { id: 71, user_id: 12, token: OTHER, abilities: ['*'] },
      ],
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
        ...Array.from({ length: 120 }, (_, i) => ({
          id: 1 + i,
          environment_id: 5,
          server_id: 7,
          name: `daemon-${i}`,
          command: 'php artisan queue:work',
          username: 'forge',
          directory: '/home/forge/site',
          processes: 1,
        })),
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
    // The first full pass goes on after the team answers: its token step (token 71 is no member).
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

  it("writes the finance summary and the head, no project or daemon, for a server's cost", async () => {
    const count = await writesFor(
      () => db.query('UPDATE servers SET monthly_cost = 30 WHERE id = 7'),
      async () => (await api.get('/api/big/finances', { token: SECRET })).body.totals.EUR === 35,
    );
    expect(count.of('project', 'daemon', 'member', 'token', 'user')).toBe(0);
    expect(count.of('finance')).toBe(2);
    expect(count.data).toBeLessThanOrEqual(10);
    expect(bystander(count)).toEqual([]);
  });

  it('writes the finance summary alone for a cost line', async () => {
    const count = await writesFor(
      () => db.query(`UPDATE costs SET amount = 6 WHERE team_id = 1`),
      async () => (await api.get('/api/big/finances', { token: SECRET })).body.totals.EUR === 36,
    );
    expect(count.of('project', 'daemon', 'member', 'token', 'user')).toBe(0);
    expect(count.data).toBeLessThanOrEqual(10);
  });

  it('writes that daemon and no project for a changed daemon, at most 10 items', async () => {
    const count = await writesFor(
      () => db.query(`UPDATE daemons SET processes = 3 WHERE id = 1`),
      async () => (await api.get('/api/big/daemons?per_page=1', { token: SECRET })).body.data[0].processes === 3,
    );
    expect(count.of('project', 'finance', 'member', 'token', 'user')).toBe(0);
    expect(count.of('daemon'), JSON.stringify(count.keys)).toBe(1);
    expect(count.data, JSON.stringify(count.keys)).toBeLessThanOrEqual(10);
    expect(bystander(count)).toEqual([]);
  });

  it('writes that project and no daemon for a changed project, and for a deleted client the project that loses it', async () => {
    const count = await writesFor(
      () => db.query(`UPDATE projects SET name = 'Renamed' WHERE id = 1001`),
      async () => (await api.get('/api/big/projects?per_page=2', { token: SECRET })).body.data[1].name === 'Renamed',
    );
    expect(count.of('daemon', 'finance', 'member', 'token', 'user')).toBe(0);
    expect(count.of('project'), JSON.stringify(count.keys)).toBe(1);
    expect(count.data, JSON.stringify(count.keys)).toBeLessThanOrEqual(10);
    // The client's projects are read again whole (ON DELETE SET NULL is no change of a project's own
    // row on MySQL's log): only the one that named it changed.
    const deleted = await writesFor(
      () => db.query('DELETE FROM clients WHERE id = 3'),
      async () => (await api.get('/api/big/projects?per_page=1', { token: SECRET })).body.data[0].client_id === null,
    );
    expect(deleted.of('daemon', 'finance')).toBe(0);
    expect(deleted.of('project'), JSON.stringify(deleted.keys)).toBe(1);
    expect(deleted.data, JSON.stringify(deleted.keys)).toBeLessThanOrEqual(10);
  });

  it("writes that user's token, user item and the member index for a member added, no resource item", async () => {
    const count = await writesFor(
      () =>
        db.query(
          `INSERT INTO team_user (team_id, user_id, role, created_at, updated_at) VALUES (1, 12, 'editor', ${now}, ${now})`,
        ),
      async () => (await api.get('/api/big/projects?per_page=1', { token: OTHER })).status === 200,
    );
    expect(count.of('project', 'daemon', 'finance')).toBe(0);
    expect(count.of('token')).toBe(1);
    expect(count.data).toBeLessThanOrEqual(10);
    const removed = await writesFor(
      () => db.query('DELETE FROM team_user WHERE team_id = 1 AND user_id = 12'),
      async () => (await api.get('/api/big/projects?per_page=1', { token: OTHER })).status === 404,
    );
    expect(removed.of('project', 'daemon', 'finance')).toBe(0);
    expect(removed.of('token')).toBe(1);
  });

  it('writes that token for a token changed', async () => {
    const count = await writesFor(
      () => db.query(`UPDATE personal_access_tokens SET abilities = '["daemons:read"]' WHERE id = 71`),
      async () => (await api.get('/api/bystander/projects', { token: OTHER })).status === 403,
    );
    expect(count.of('project', 'daemon', 'finance', 'member', 'head')).toBe(0);
    expect(count.of('token')).toBe(1);
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
