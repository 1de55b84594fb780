import { afterAll, beforeAll, expect, it } from 'vitest';
import { withMappingFile, defaultMapping } from '../../shared/sync/mapping.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * Jetstream's teams as it ships them have no slug (docs/contract.md, section 9, "Jetstream's teams
 * have no slug"): the default mapping reads none, setup says which it found, and such a team is served
 * by its id alone. A mapping file that gives only some queries works, the rest staying the default.
 */
const SECRET = 'ada-secret-token-0001';

describeSources("Jetstream's stock teams", (engine) => {
  let db: SourceDatabase;
  let table: TestTable;

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, {
      teams: [{ id: 1, slug: 'acme', name: 'Acme', user_id: 10 }],
      users: [{ id: 10, name: 'Ada', teams: [1] }],
      tokens: [{ id: 70, user_id: 10, token: SECRET, name: 'cli', abilities: ['*'] }],
      projects: [{ id: 100, team_id: 1, name: 'Site', slug: 'site', created_at: '2026-01-02T05:04:05Z' }],
    });
    // Jetstream's own migration makes no slug: the suite's schema has one, for the other tests.
    await db.query('ALTER TABLE teams DROP COLUMN slug');
    table = await freshTable();
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  it('are set up, said to have no slug, and served by id alone', async () => {
    const lines = await setUp(db);
    expect(lines.join('\n')).toContain("teams have no slug (Jetstream's stock schema)");
    const sync = startSync(db, table);
    try {
      await sync.readyNow;
      const api = tableApi(table);
      const byId = await api.get('/api/1/projects', { token: SECRET });
      expect(byId.status).toBe(200);
      expect(byId.body.data.map((p: { name: string }) => p.name)).toEqual(['Site']);
      expect((await api.get('/api/acme/projects', { token: SECRET })).status).toBe(404);
      await db.query(`UPDATE projects SET name = 'Renamed' WHERE id = 100`);
      await servedWithin(
        async () => (await api.get('/api/1/projects', { token: SECRET })).body.data[0].name === 'Renamed',
      );
    } finally {
      await sync.stop();
    }
  });

  it('take a mapping file that gives only the teams query (the rest stays the default)', async () => {
    const mapping = withMappingFile(defaultMapping(engine, { teamsHaveSlug: false }), {
      queries: { teams: "SELECT id, CONCAT('team-', id) AS slug, name, user_id FROM teams" },
    });
    const own = await freshTable();
    const sync = startSync(db, own, { mapping });
    try {
      await sync.readyNow;
      const api = tableApi(own);
      expect((await api.get('/api/team-1/projects', { token: SECRET })).status).toBe(200);
    } finally {
      await sync.stop();
    }
  });
});
