import { afterAll, beforeAll, expect, it } from 'vitest';
import { defaultMapping, MappingError, withMappingFile } from '../../shared/sync/mapping.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { type RunningSync, servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * What a platform team tells the sync (docs/sync.md): a mapping file for a schema that differs from
 * Laravel's (its `watch` entries say what a changed row of a table touches), the zone of the source's
 * times, and how often a full pass reconciles what the log cannot report (a foreign-key cascade, which
 * MariaDB's and MySQL's binary log do not record: docs/sync-binlog-libraries.md).
 */
const SECRET = 'mapping-secret-token1';

describeSources('the sync, told how to read the source', (engine) => {
  let db: SourceDatabase;
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
      environments: [{ id: 6, team_id: 2, name: 'production' }],
      // Globex's daemon runs on a server of Acme's: a daemon names a server of any team.
      servers: [{ id: 8, team_id: 1, name: 'shared-1', monthly_cost: '10.00', currency: 'EUR' }],
      daemons: [
        {
          id: 9,
          environment_id: 6,
          server_id: 8,
          name: 'queue',
          command: 'php artisan queue:work',
          username: 'forge',
          directory: '/home/forge/globex',
          processes: 1,
        },
      ],
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
    // The earlier format's `key` and `ref: 'SELECT {row}.org_id AS ref'` are now the touch's own
    // columns: `team` names the row's column that holds the team's id (a SELECT over {row.<column>}
    // returning team_id where the row holds none), `item` the one that holds the project's id, so that
    // only that project is read again.
    const mapping = withMappingFile(defaultMapping(engine), {
      queries: {
        projects:
          'SELECT pid AS id, org_id AS team_id, NULL AS client_id, title AS name, handle AS slug, added_at AS created_at FROM app_projects',
      },
      watch: {
        projects: null,
        app_projects: {
          columns: ['pid', 'org_id', 'title', 'handle', 'added_at'],
          touches: [{ part: 'projects', team: 'org_id', item: 'pid' }],
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
      // A sync told another mapping than setup prepared the source for: on PostgreSQL the publication
      // lacks the tables it watches, which it names with the setup command; MySQL's binlog holds every
      // table, with nothing to prepare for a mapping.
      const other = startSync(db, await freshTable());
      if (engine === 'postgres') {
        await expect(other.done).rejects.toThrow(
          /is not prepared for the sync \(projects is not published; .*\): run npm run sync -- setup --source <url>$/,
        );
      } else {
        await other.readyNow;
        await other.stop();
      }
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
    const teamOf =
      /watch\.x\.touches\[0\]\.team: a column holding the team's id, or a SELECT of it over \{row\.<column>\}/;
    expect(() =>
      withMappingFile(defaults, {
        watch: { x: { columns: ['id'], touches: [{ part: 'projects', team: 'SELECT 1' }] } },
      }),
    ).toThrow(teamOf);
    // A mapping file of the earlier, trigger-based version is refused, naming what changed.
    expect(() =>
      withMappingFile(defaults, {
        watch: { x: { columns: ['id'], touches: [{ part: 'projects', ref: 'SELECT {row}.team_id AS ref' }] } },
      }),
    ).toThrow(teamOf);
    expect(() =>
      withMappingFile(defaults, {
        watch: { x: { key: 'pid', columns: ['pid'], touches: [{ part: 'projects', team: 'team_id' }] } },
      }),
    ).toThrow(/watch\.x: unknown key "key"/);
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

  it('reconciles in a periodic full pass what the log cannot report: a foreign-key cascade across teams', async () => {
    // Two syncs of the same source side by side: one with no periodic full pass (the log alone), one
    // with a full pass every 2 s here (the command's least is 10 s; MySQL's default 5 minutes).
    const logAlone = { table: await freshTable() } as { table: TestTable; sync: RunningSync };
    const withPasses = { table: await freshTable() } as { table: TestTable; sync: RunningSync };
    logAlone.sync = startSync(db, logAlone.table, { fullPassEveryMs: 0 });
    withPasses.sync = startSync(db, withPasses.table, { fullPassEveryMs: 2_000 });
    const get = (table: TestTable, path: string) => tableApi(table).get(path, { token: SECRET });
    const globexDaemons = async (table: TestTable) => (await get(table, '/api/globex/daemons')).body.meta?.total;
    const acmeTotal = async (table: TestTable) => (await get(table, '/api/acme/finances')).body.totals?.EUR;
    try {
      await Promise.all([logAlone.sync.readyNow, withPasses.sync.readyNow]);
      expect(await globexDaemons(logAlone.table)).toBe(1);
      // A TRUNCATE is in the log on both engines (it names no row): served without a periodic pass.
      await db.query('TRUNCATE TABLE costs');
      await servedWithin(async () => (await acmeTotal(logAlone.table)) === 10);
      // Acme's server goes, and with it (ON DELETE CASCADE) Globex's daemon that ran on it. PostgreSQL's
      // log holds the cascaded row; MySQL's binary log holds the server's row alone, and the daemons
      // that named it are gone by the time the sync asks which teams they were of.
      await db.query('DELETE FROM servers WHERE id = 8');
      await servedWithin(async () => (await acmeTotal(logAlone.table)) === undefined);
      // A change after it, to Globex: once it is served, the log was read past the cascade.
      await db.query(
        `INSERT INTO costs (team_id, label, amount, currency, created_at, updated_at) VALUES (2, 'Late', 3, 'EUR', ${now}, ${now})`,
      );
      await servedWithin(async () => (await get(logAlone.table, '/api/globex/finances')).body.totals?.EUR === 3);
      expect(await globexDaemons(logAlone.table)).toBe(engine === 'postgres' ? 0 : 1);
      // The sync with periodic passes serves it within 10 s on both engines: on MySQL by its full pass.
      await servedWithin(async () => (await globexDaemons(withPasses.table)) === 0);
    } finally {
      await Promise.all([logAlone.sync.stop(), withPasses.sync.stop()]);
    }
  }, 90_000);
});
