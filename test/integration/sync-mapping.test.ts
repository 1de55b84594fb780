import { afterAll, beforeAll, expect, it } from 'vitest';
import { defaultMapping, MappingError, withMappingFile } from '../../shared/sync/mapping.ts';
import { freshTable } from '../support/dynamodb.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * What a platform team tells the sync (docs/sync.md): a mapping file for a schema that differs from
 * Laravel's, the zone of the source's times, and how often the full pass reconciles what the
 * triggers cannot report (a TRUNCATE on MySQL, a change table emptied by hand).
 */
const SECRET = 'mapping-secret-token1';

describeSources('the sync, told how to read the source', (engine) => {
  let db: SourceDatabase;
  const now = engine === 'postgres' ? 'now()' : 'NOW()';

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, {
      teams: [{ id: 1, slug: 'acme', name: 'Acme', user_id: 10 }],
      users: [{ id: 10, name: 'Ada', teams: [1] }],
      tokens: [{ id: 70, user_id: 10, token: SECRET, abilities: ['*'] }],
      costs: [{ team_id: 1, label: 'Backups', amount: '5.00', currency: 'EUR' }],
    });
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  it("reads a schema that differs from Laravel's through a mapping file's queries, and follows its watched table", async () => {
    const integer = engine === 'postgres' ? 'bigint' : 'bigint unsigned';
    await db.query(`CREATE TABLE app_projects (pid ${integer} PRIMARY KEY, org_id ${integer} NOT NULL,
      title varchar(255) NOT NULL, handle varchar(255) NOT NULL, added_at timestamp NULL)`);
    await db.query(`INSERT INTO app_projects VALUES (500, 1, 'From elsewhere', 'elsewhere', '2026-03-04 05:06:07')`);
    const mapping = withMappingFile(defaultMapping(engine), {
      queries: {
        projects:
          'SELECT pid AS id, org_id AS team_id, NULL AS client_id, title AS name, handle AS slug, added_at AS created_at FROM app_projects',
      },
      watch: {
        projects: null,
        app_projects: {
          key: 'pid',
          columns: ['pid', 'org_id', 'title', 'handle', 'added_at'],
          touches: [{ part: 'projects', ref: 'SELECT {row}.org_id AS ref' }],
        },
      },
    });
    await setUp(db, mapping);
    const table = await freshTable();
    const api = tableApi(table);
    const sync = startSync(db, table, { mapping });
    try {
      await servedWithin(async () => (await api.get('/api/acme/projects', { token: SECRET })).status === 200, 30_000);
      expect((await api.get('/api/acme/projects', { token: SECRET })).body.data).toEqual([
        {
          id: 500,
          name: 'From elsewhere',
          slug: 'elsewhere',
          client_id: null,
          created_at: '2026-03-04T05:06:07+00:00',
        },
      ]);
      await db.query(`UPDATE app_projects SET title = 'Renamed elsewhere' WHERE pid = 500`);
      await servedWithin(
        async () => (await api.get('/api/acme/projects', { token: SECRET })).body.data[0].name === 'Renamed elsewhere',
      );
      // A sync told another mapping than setup installed says so.
      const other = startSync(db, await freshTable());
      await expect(other.done).rejects.toThrow(/was prepared for another mapping: run npm run sync -- setup again/);
    } finally {
      await sync.stop();
      await setUp(db); // the default mapping again, for the tests below
    }
  }, 90_000);

  it('refuses a mapping file that is not one, naming the key', () => {
    const defaults = defaultMapping(engine);
    expect(() => withMappingFile(defaults, { querys: {} })).toThrow(MappingError);
    expect(() => withMappingFile(defaults, { queries: { projets: 'SELECT 1' } })).toThrow(
      /queries: unknown collection "projets" \(one of teams, users/,
    );
    expect(() =>
      withMappingFile(defaults, {
        watch: { x: { columns: ['id'], touches: [{ part: 'projects', ref: 'SELECT 1' }] } },
      }),
    ).toThrow(/watch\.x\.touches\[0\]\.ref: a SELECT of the ids "AS ref", written over the row as \{row\}/);
  });

  it('reads times without a zone in the zone it is told (Laravel app.timezone)', async () => {
    await db.query(
      `INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES (600, 1, 'Summer', 's', '2026-07-01 12:00:00', ${now})`,
    );
    await db.query(
      `INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES (601, 1, 'Winter', 'w', '2026-01-15 12:00:00', ${now})`,
    );
    const table = await freshTable();
    const api = tableApi(table);
    const sync = startSync(db, table, { timezone: 'Europe/Berlin', once: true });
    await sync.done;
    const times = (await api.get('/api/acme/projects', { token: SECRET })).body.data.map(
      (p: { created_at: string }) => p.created_at,
    );
    expect(times).toEqual(['2026-07-01T10:00:00+00:00', '2026-01-15T11:00:00+00:00']);
  });

  it('reconciles in its periodic full pass what the triggers could not report', async () => {
    const table = await freshTable();
    const api = tableApi(table);
    // Every 2 s here (the command's least is 10 s): the test waits for two of them.
    const sync = startSync(db, table, { fullPassEveryMs: 2_000 });
    const total = async () => (await api.get('/api/acme/finances', { token: SECRET })).body.totals?.EUR;
    try {
      await servedWithin(async () => (await total()) === 5, 30_000);
      // TRUNCATE fires no row trigger on MySQL (PostgreSQL records it), nor does a change the
      // change table lost: both are found by the next full pass.
      await db.query('TRUNCATE TABLE costs');
      await servedWithin(async () => (await total()) === undefined, 25_000);
      await db.query(
        `INSERT INTO costs (team_id, label, amount, currency, created_at, updated_at) VALUES (1, 'Late', 3, 'EUR', ${now}, ${now})`,
      );
      await db.query('DELETE FROM team_resources_changes');
      await servedWithin(async () => (await total()) === 3, 25_000);
    } finally {
      await sync.stop();
    }
  }, 90_000);
});
