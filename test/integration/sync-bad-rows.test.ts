import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { type RunningSync, servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * A row that breaks the snapshot's rules (docs/contract.md, sections 7 and 9) keeps the part of its
 * team it belongs to at its last good state, and is said once in one line naming the table, the id
 * and the field; the team's other parts and every other team go on syncing; once the row is fixed,
 * the part follows.
 */
const SECRET = 'bad-rows-secret-00001';

describeSources('a bad row in the source', (engine) => {
  let db: SourceDatabase;
  let table: TestTable;
  let api: ReturnType<typeof tableApi>;
  let sync: RunningSync;
  const now = engine === 'postgres' ? 'now()' : 'NOW()';
  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, {
      teams: [
        { id: 1, slug: 'acme', name: 'Acme', user_id: 10 },
        { id: 2, slug: 'globex', name: 'Globex', user_id: 10 },
      ],
      users: [{ id: 10, name: 'Ada', teams: [1, 2] }],
      tokens: [{ id: 70, user_id: 10, token: SECRET, abilities: ['*'] }],
      clients: [
        { id: 3, team_id: 1, name: 'Client A' },
        { id: 4, team_id: 2, name: 'Client of Globex' },
      ],
      projects: [{ id: 100, team_id: 1, name: 'Site', slug: 'site', created_at: '2026-01-02T03:04:05Z' }],
      costs: [{ team_id: 1, label: 'Backups', amount: '5.00', currency: 'EUR' }],
    });
    await setUp(db);
    table = await freshTable();
    api = tableApi(table);
    sync = startSync(db, table);
    await servedWithin(async () => (await api.get('/api/acme/projects', { token: SECRET })).status === 200, 30_000);
    await servedWithin(async () => sync.ready, 30_000); // its token step follows the teams
  }, 60_000);
  afterAll(async () => {
    await sync?.stop();
    await db?.drop();
  });

  const names = async (team: string) =>
    ((await api.get(`/api/${team}/projects`, { token: SECRET })).body.data as { name: string }[]).map((p) => p.name);
  const said = (text: string) => sync.lines.filter((line) => line.includes(text));

  it('keeps the projects at their last good state, says so once, and lets the other parts and teams go on', async () => {
    // Parameters: the control character travels as data, as Eloquent would send it.
    await db.query(
      'INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES ($1, 1, $2, $3, $4, $4)',
      [101, 'Bad\u0007name', 'bad', '2026-01-02 03:04:05'],
    );
    await servedWithin(async () => said('projects 101: name contains a control character').length === 1);
    expect(await names('acme')).toEqual(['Site']);
    // The team's finance, and another team, still follow the source.
    await db.query(`UPDATE costs SET amount = 6 WHERE team_id = 1`);
    await servedWithin(async () => (await api.get('/api/acme/finances', { token: SECRET })).body.totals.EUR === 6);
    await db.query(
      'INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES (200, 2, $1, $2, $3, $3)',
      ['Theirs', 'theirs', '2026-01-02 03:04:05'],
    );
    await servedWithin(async () => (await names('globex')).includes('Theirs'));
    // Read again with every later change to the team, the row is not said again.
    await db.query('UPDATE projects SET slug = $1 WHERE id = 100', ['site-2']);
    await db.query(`UPDATE costs SET amount = 7 WHERE team_id = 1`);
    await servedWithin(async () => (await api.get('/api/acme/finances', { token: SECRET })).body.totals.EUR === 7);
    expect(said('projects 101')).toHaveLength(1);
    // Fixed, the projects follow.
    await db.query('UPDATE projects SET name = $1 WHERE id = 101', ['Good name']);
    await servedWithin(async () => (await names('acme')).includes('Good name'));
  });

  it('names a project whose client is of another team', async () => {
    await db.query('UPDATE projects SET client_id = 4 WHERE id = 101');
    await servedWithin(
      async () => said("projects 101: client_id 4 belongs to team 2, not to the project's team 1").length === 1,
    );
    expect(await names('acme')).toEqual(['Site', 'Good name']);
    await db.query('UPDATE projects SET client_id = 3 WHERE id = 101');
    await servedWithin(
      async () => (await api.get('/api/acme/projects', { token: SECRET })).body.data[1].client_id === 3,
    );
  });

  it('keeps the finance summary for an amount with 5 decimals', async () => {
    await db.query(`UPDATE costs SET amount = '8.00001' WHERE team_id = 1`);
    await servedWithin(async () => said('costs ').some((line) => line.includes('decimals')));
    expect((await api.get('/api/acme/finances', { token: SECRET })).body.totals.EUR).toBe(7);
    await db.query(`UPDATE costs SET amount = '8' WHERE team_id = 1`);
    await servedWithin(async () => (await api.get('/api/acme/finances', { token: SECRET })).body.totals.EUR === 8);
  });

  it('keeps the whole team for a bad team row, and creates a new team only once all of it keeps the rules', async () => {
    const refused = sync.nextBatch((batch) => batch.SyncRowsRefused! > 0);
    await db.query('UPDATE teams SET name = $1 WHERE id = 2', ['Glo\u001bbex']);
    await refused;
    expect(said('teams 2: name contains a control character')).toHaveLength(1);
    // The project's change is taken (and the team still refused) before the team row is fixed: the
    // batch that read it is over before the fix is committed, so the fix alone must bring the project too.
    const taken = sync.nextBatch((batch) => batch.SyncRowsRefused! > 0 && batch.SyncChangesApplied! > 0);
    await db.query(
      'INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES (201, 2, $1, $2, $3, $3)',
      ['Held back', 'held', '2026-01-02 03:04:05'],
    );
    await taken;
    expect(await names('globex')).not.toContain('Held back');
    await db.query('UPDATE teams SET name = $1 WHERE id = 2', ['Globex']);
    await servedWithin(async () => (await names('globex')).includes('Held back'));
    // The new team and its bad project in one commit: the sync never sees the team without it.
    const session = await db.session();
    try {
      await session.query(engine === 'postgres' ? 'BEGIN' : 'START TRANSACTION');
      await session.query(`INSERT INTO teams (id, user_id, name, slug, personal_team, created_at, updated_at)
        VALUES (3, 10, 'Initech', 'initech', ${engine === 'postgres' ? 'false' : '0'}, ${now}, ${now})`);
      // PostgreSQL refuses a NUL in text; a control character that both engines store breaks the rules too.
      await session.query(
        'INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES (300, 3, $1, $2, $3, $3)',
        ['Bad\u0001', 'x', '2026-01-02 03:04:05'],
      );
      await session.query('COMMIT');
    } finally {
      await session.close();
    }
    await servedWithin(async () => said('projects 300').length === 1);
    expect((await api.get('/api/initech/projects', { token: SECRET })).status).toBe(404);
    await db.query('UPDATE projects SET name = $1 WHERE id = 300', ['Fine']);
    await servedWithin(async () => (await api.get('/api/initech/projects', { token: SECRET })).status === 200);
  });
});
