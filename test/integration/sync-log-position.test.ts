import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slotName } from '../../shared/sync/log/reader.ts';
import { defaultMapping } from '../../shared/sync/mapping.ts';
import { removeSetup } from '../../shared/sync/setup.ts';
import { readLogPosition } from '../../shared/sync/state.ts';
import { parseSourceUrl } from '../../shared/sync/source/url.ts';
import { type AppWriters, startAppWriters } from '../support/app-writers.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { legacySetupStatements } from '../support/legacy-capture.ts';
import {
  createSourceDatabase,
  describeSources,
  type SourceDatabase,
  sourceServer,
} from '../support/source-databases.ts';
import { seedSource, type SourceSnapshot } from '../support/source-seed.ts';
import { type RunningServer, startMariaDb } from '../support/source-servers.ts';
import { type RunningSync, servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * Where the sync is in the source's log (docs/contract.md, section 9, "The log it holds back is
 * bounded, and losing it loses nothing"), end to end: the sync as its own role, DynamoDB Local, the
 * API's answers. Stopped and started again, it goes on from the position it acknowledged, losing
 * nothing and needing no full pass; its PostgreSQL slot dropped, or the MariaDB binlog it needs
 * purged, while it was stopped, it says so in one line, takes the log's position now and reconciles
 * with a full pass, losing nothing. `sync remove` leaves no slot, publication or connection of the
 * sync's; a source the earlier trigger-based version prepared is upgraded by setup, and the app's
 * writes then run with the sync.
 */
const ADA = 'log-position-ada-token1';

function laravelData(): SourceSnapshot {
  return {
    teams: [
      { id: 1, slug: 'acme', name: 'Acme', user_id: 10 },
      { id: 2, slug: 'globex', name: 'Globex', user_id: 10 },
    ],
    users: [{ id: 10, name: 'Ada', teams: [1, 2] }],
    tokens: [{ id: 70, user_id: 10, token: ADA, abilities: ['*'] }],
    projects: [
      { id: 100, team_id: 1, name: 'Site', slug: 'site' },
      { id: 101, team_id: 1, name: 'Shop', slug: 'shop' },
      { id: 200, team_id: 2, name: 'Globex site', slug: 'globex-site' },
    ],
    costs: [{ id: 1, team_id: 1, label: 'Backups', amount: '5.00', currency: 'EUR' }],
  };
}

/** The changes made while the sync is stopped: an insert, a rename, a hard delete, a cost, a new team. */
async function changeWhileStopped(db: SourceDatabase, round: number) {
  const now = db.engine === 'postgres' ? 'now()' : 'NOW()';
  await db.query(
    `INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES ($1, 1, $2, $2, ${now}, ${now})`,
    [1000 + round, `while stopped ${round}`],
  );
  await db.query('UPDATE projects SET name = $1 WHERE id = 100', [`Site ${round}`]);
  await db.query('DELETE FROM projects WHERE id = $1', [round === 1 ? 101 : 1000 + round - 1]);
  await db.query('UPDATE costs SET amount = $1 WHERE id = 1', [`${5 + round}.00`]);
  await db.query(`INSERT INTO teams (id, name, slug, personal_team) VALUES ($1, $2, $2, false)`, [
    10 + round,
    `team-${round}`,
  ]);
  await db.query('INSERT INTO team_user (team_id, user_id, role) VALUES ($1, 10, $2)', [10 + round, 'editor']);
}

/** What the API serves of those changes, as the source now holds them. */
function servedAfter(table: TestTable, round: number) {
  const api = tableApi(table);
  return async () => {
    const projects = await api.get('/api/acme/projects?per_page=50', { token: ADA });
    const names = (projects.body?.data ?? []).map((p: { name: string }) => p.name).sort();
    const finances = await api.get('/api/acme/finances', { token: ADA });
    const added = await api.get(`/api/team-${round}/projects`, { token: ADA });
    return (
      JSON.stringify(names) === JSON.stringify([`Site ${round}`, `while stopped ${round}`].sort()) &&
      finances.body?.totals?.EUR === 5 + round &&
      added.status === 200
    );
  };
}

describeSources('the log position, kept and lost', (engine) => {
  let db: SourceDatabase;
  let table: TestTable;
  let sync: RunningSync | undefined;
  const said = () => `the sync said: ${JSON.stringify(sync?.lines)}`;

  beforeAll(async () => {
    // The app's role has REPLICATION here, so that `sync remove` may drop the sync's slot (as the docs ask).
    db = await createSourceDatabase(engine, { replication: true });
    await seedSource(db, laravelData());
    await setUp(db);
    table = await freshTable();
    sync = startSync(db, table);
    await sync.readyNow;
  }, 60_000);
  afterAll(async () => {
    await sync?.stop();
    await db?.drop();
  });

  it('runs as its own role, with exactly what contract section 9 allows it', async () => {
    const role = `${db.user}_sync`;
    expect(new URL(db.syncUrl).username).toBe(role);
    if (engine === 'postgres') {
      expect(
        await db.adminQuery(
          `SELECT rolsuper, rolreplication, rolcreatedb, rolcreaterole, rolbypassrls, rolinherit,
                  (SELECT count(*)::int FROM pg_auth_members m WHERE m.member = r.oid) AS memberships,
                  (SELECT count(*)::int FROM pg_class c WHERE c.relowner = r.oid) AS owns
             FROM pg_roles r WHERE rolname = $1`,
          [role],
        ),
      ).toEqual([
        {
          rolsuper: false,
          rolreplication: true,
          rolcreatedb: false,
          rolcreaterole: false,
          rolbypassrls: false,
          rolinherit: true,
          memberships: 0,
          owns: 0,
        },
      ]);
      // On every table of the app's schema SELECT, and nothing else; no CREATE on the database or schema.
      const privileges = await db.adminQuery<{ name: string; privileges: string }>(
        `SELECT c.relname AS name,
                concat_ws(',', CASE WHEN has_table_privilege($1, c.oid, 'SELECT') THEN 'SELECT' END,
                  CASE WHEN has_table_privilege($1, c.oid, 'INSERT') THEN 'INSERT' END,
                  CASE WHEN has_table_privilege($1, c.oid, 'UPDATE') THEN 'UPDATE' END,
                  CASE WHEN has_table_privilege($1, c.oid, 'DELETE') THEN 'DELETE' END,
                  CASE WHEN has_table_privilege($1, c.oid, 'TRUNCATE') THEN 'TRUNCATE' END,
                  CASE WHEN has_table_privilege($1, c.oid, 'REFERENCES') THEN 'REFERENCES' END,
                  CASE WHEN has_table_privilege($1, c.oid, 'TRIGGER') THEN 'TRIGGER' END) AS privileges
           FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' ORDER BY 1`,
        [role],
      );
      expect(privileges.length).toBeGreaterThanOrEqual(10);
      expect(privileges.filter((table) => table.privileges !== 'SELECT')).toEqual([]);
      expect(
        await db.adminQuery(
          `SELECT has_database_privilege($1, current_database(), 'CREATE') AS database,
                  has_schema_privilege($1, 'public', 'CREATE') AS schema`,
          [role],
        ),
      ).toEqual([{ database: false, schema: false }]);
      // The running sync's sessions, its walsender among them, are that role's.
      const sessions = await db.adminQuery<{ usename: string; backend_type: string }>(
        "SELECT usename, backend_type FROM pg_stat_activity WHERE application_name = 'team-resources-sync' AND datname = current_database()",
      );
      expect(sessions.some((session) => session.backend_type === 'walsender')).toBe(true);
      expect(new Set(sessions.map((session) => session.usename))).toEqual(new Set([role]));
    } else {
      const grants = (await db.adminQuery(`SHOW GRANTS FOR '${role}'@'%'`)).map((row) =>
        String(Object.values(row)[0]).replace(/ IDENTIFIED BY PASSWORD '[^']*'/, ''),
      );
      // REPLICATION CLIENT is BINLOG MONITOR in MariaDB 10.5 and later.
      expect(grants.sort()).toEqual([
        `GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO \`${role}\`@\`%\``,
        `GRANT SELECT ON \`${db.database}\`.* TO \`${role}\`@\`%\``,
      ]);
      const dumps = await db.adminQuery(
        "SELECT USER FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'",
      );
      expect(dumps.filter((row) => row.USER === role)).toHaveLength(1);
    }
  });

  it('stopped, and started again from where it was: what changed meanwhile is served, from the log, no full pass', async () => {
    // A change served, so that its position is acknowledged and carried on the lease.
    await db.query(`UPDATE projects SET name = 'Globex site 2' WHERE id = 200`);
    const api = tableApi(table);
    await servedWithin(async () => {
      const answer = await api.get('/api/globex/projects', { token: ADA });
      return answer.body?.data?.[0]?.name === 'Globex site 2';
    });
    await sync!.stop();
    const kept = await readLogPosition(table, parseSourceUrl(db.syncUrl).redacted);
    expect(kept).toBeDefined();
    await changeWhileStopped(db, 1);
    // Taking over as the deployed sync does: the log from the position it acknowledged, no first full pass.
    sync = startSync(db, table, { changesFirst: true });
    await servedWithin(servedAfter(table, 1), 10_000, said);
    expect(sync.fullPasses).toBe(0);
    expect(sync.lines).toEqual([]);
  });

  it('ended midway through its first full pass (a deployed invocation at its deadline): carries no position, so the next run passes again', async () => {
    const fresh = await freshTable();
    const cut = startSync(db, fresh, { endInFirstPass: true });
    await cut.done;
    expect(cut.fullPasses).toBe(1);
    expect(cut.ready).toBe(false);
    expect(await readLogPosition(fresh, parseSourceUrl(db.syncUrl).redacted)).toBeUndefined();
    // The next run, taking over as the deployed sync does, finds no position: it passes first.
    const next = startSync(db, fresh, { changesFirst: true });
    await next.readyNow;
    expect(next.fullPasses).toBe(1);
    await next.stop();
    // Its table's own slot goes, so that the remove below finds only the file's.
    if (engine === 'postgres') await db.adminQuery('SELECT pg_drop_replication_slot($1)', [slotName(fresh.tableName)]);
  });

  it.runIf(engine === 'postgres')(
    'its replication slot dropped while it was stopped: one line, a new position, a full pass, nothing lost',
    async () => {
      await sync!.stop();
      const slot = slotName(table.tableName);
      await db.adminQuery('SELECT pg_drop_replication_slot($1)', [slot]);
      await changeWhileStopped(db, 2);
      sync = startSync(db, table, { changesFirst: true });
      const pass = sync.nextFullPass();
      await servedWithin(async () => sync!.lines.length > 0, 10_000, said);
      expect(sync.lines).toEqual([
        `the replication slot ${slot} no longer exists (it was dropped): reading the log from its end, ` +
          'after a full pass that reconciles the table',
      ]);
      await pass;
      await servedWithin(servedAfter(table, 2), 10_000, said);
      // The new slot is the sync's, and follows on.
      const [made] = await db.adminQuery<{ active: boolean }>(
        'SELECT active FROM pg_replication_slots WHERE slot_name = $1',
        [slot],
      );
      expect(made).toEqual({ active: true });
      await db.query(`UPDATE projects SET name = 'After the new slot' WHERE id = 200`);
      await servedWithin(
        async () =>
          (await tableApi(table).get('/api/globex/projects', { token: ADA })).body?.data?.[0]?.name ===
          'After the new slot',
        10_000,
        said,
      );
      expect(sync.lines).toHaveLength(1);
    },
  );

  it('sync remove, once it has stopped, leaves no slot, publication or connection of the sync behind', async () => {
    const running = sync!;
    const sessions = () =>
      engine === 'postgres'
        ? db.adminQuery('SELECT pid FROM pg_stat_activity WHERE usename = $1', [`${db.user}_sync`])
        : db.adminQuery('SELECT ID FROM information_schema.PROCESSLIST WHERE USER = $1', [`${db.user}_sync`]);
    expect(await sessions()).not.toEqual([]);
    const remove = () =>
      removeSetup(parseSourceUrl(db.url), (shape) => defaultMapping(engine, shape), {
        say: () => {},
        tableName: table.tableName,
      });
    if (engine === 'postgres')
      await expect(remove()).rejects.toThrow(`a sync is reading the replication slot ${slotName(table.tableName)}`);
    await running.stop();
    sync = undefined;
    // The sync's sessions end with it (a walsender lets go a moment after its socket closes).
    await servedWithin(async () => (await sessions()).length === 0, 10_000);
    const lines = await remove();
    if (engine === 'postgres') {
      expect(lines).toContain(
        `  dropped the replication slot ${slotName(table.tableName)} (the server keeps no WAL for it any more)`,
      );
      expect(lines).toContain('  dropped the publication team_resources_sync');
      expect(
        await db.adminQuery('SELECT slot_name FROM pg_replication_slots WHERE database = $1', [db.database]),
      ).toEqual([]);
      expect(await db.adminQuery('SELECT pubname FROM pg_publication')).toEqual([]);
      expect(
        await db.adminQuery(
          "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' AND relreplident = 'f'",
        ),
      ).toEqual([]);
      // Removed, the source is not prepared: a sync started again says so, and names setup.
      const refused = startSync(db, table);
      await expect(refused.done).rejects.toThrow(/is not prepared for the sync .*run npm run sync -- setup/);
    } else {
      expect(lines[0]).toMatch(
        /^nothing of the sync is in the source \(mysql:\/\/.*\*\*\*@.*\): its binary log is read as it is$/,
      );
    }
    expect(await sessions()).toEqual([]);
  });

  it('a source the earlier trigger version prepared: setup removes its capture and says so; the app writes with the sync running', async () => {
    for (const statement of legacySetupStatements(engine)) await db.query(statement);
    const lines = await setUp(db);
    expect(lines.join('\n')).toMatch(
      engine === 'postgres'
        ? /removed the earlier capture's triggers on projects/
        : /dropped the trigger team_resources_projects_\w+ on projects/,
    );
    const own = await freshTable();
    sync = startSync(db, own);
    let ended = 'running';
    sync.done.then(
      () => (ended = 'stopped'),
      (error: Error) => (ended = `ended: ${error.message}`),
    );
    await sync.readyNow;
    // What the triggers made every write of the app do (and fail, once a migration renamed a column
    // they named) is gone: the app's writes, a migration among them, run and are served.
    const app: AppWriters = await startAppWriters(
      db,
      2,
      (writer, n) =>
        n % 2 === 0
          ? { sql: 'UPDATE projects SET name = $1 WHERE id = 200', params: [`Globex ${writer} ${n}`] }
          : {
              sql: `UPDATE personal_access_tokens SET last_used_at = ${engine === 'postgres' ? 'now()' : 'NOW()'} WHERE id = 70`,
            },
      { paceMs: 10 },
    );
    try {
      await app.eachDoes(20);
      await db.query('ALTER TABLE projects RENAME COLUMN slug TO handle');
      await db.query('ALTER TABLE projects RENAME COLUMN handle TO slug');
      await app.eachDoes(20);
    } finally {
      await app.stop();
    }
    expect(app.failures).toEqual([]);
    await db.query(`UPDATE projects SET name = 'After the upgrade' WHERE id = 200`);
    await servedWithin(
      async () =>
        (await tableApi(own).get('/api/globex/projects', { token: ADA })).body?.data?.[0]?.name === 'After the upgrade',
      10_000,
      () => `the sync (${ended}): ${said()}; metrics ${JSON.stringify(sync?.metrics.slice(-3))}`,
    );
  });
});

describe.skipIf(sourceServer('mysql').state === 'missing')('the log position lost (MariaDB)', () => {
  // A server of this file's own: its binlog is flushed and purged here, which would cut the other
  // test files' syncs off the suite's server.
  let server: RunningServer;
  let db: SourceDatabase;
  let sync: RunningSync | undefined;
  beforeAll(async () => {
    server = await startMariaDb();
    db = await createSourceDatabase('mysql', { server: { engine: 'mysql', adminUrl: server.adminUrl } });
    await seedSource(db, laravelData());
  }, 60_000);
  afterAll(async () => {
    await sync?.stop();
    await db?.drop();
    await server?.stop();
  });

  it('the binlog it needs purged while it was stopped: one line, a new position, a full pass, nothing lost', async () => {
    const table = await freshTable();
    sync = startSync(db, table);
    await sync.readyNow;
    await db.query(`UPDATE projects SET name = 'Globex site 2' WHERE id = 200`);
    await servedWithin(
      async () =>
        (await tableApi(table).get('/api/globex/projects', { token: ADA })).body?.data?.[0]?.name === 'Globex site 2',
    );
    await sync.stop();
    const kept = await readLogPosition(table, parseSourceUrl(db.syncUrl).redacted);
    expect(kept).toMatch(/^binlog\.\d+:\d+$/);
    await changeWhileStopped(db, 1);
    await db.adminQuery('FLUSH BINARY LOGS');
    const current = String((await db.adminQuery('SHOW MASTER STATUS'))[0]!.File);
    // MariaDB keeps a file until InnoDB has made its commits durable: the purge is asked again until done.
    const binaryLogs = async () => (await db.adminQuery('SHOW BINARY LOGS')).map((row) => String(row.Log_name));
    await servedWithin(async () => {
      await db.adminQuery(`PURGE BINARY LOGS TO '${current}'`);
      return (await binaryLogs()).length === 1;
    });
    expect(await binaryLogs()).toEqual([current]);
    sync = startSync(db, table, { changesFirst: true });
    const pass = sync.nextFullPass();
    const said = () => `the sync said: ${JSON.stringify(sync?.lines)}`;
    await servedWithin(async () => sync!.lines.length > 0, 10_000, said);
    expect(sync.lines).toHaveLength(1);
    expect(sync.lines[0]).toMatch(
      new RegExp(
        `^the source's binlog no longer holds ${kept!.replace('.', '\\.')} \\(it keeps .*\\): reading the log from its end, after a full pass that reconciles the table$`,
      ),
    );
    await pass;
    await servedWithin(servedAfter(table, 1), 10_000, said);
    await db.query(`UPDATE projects SET name = 'After the purge' WHERE id = 200`);
    await servedWithin(
      async () =>
        (await tableApi(table).get('/api/globex/projects', { token: ADA })).body?.data?.[0]?.name === 'After the purge',
      10_000,
      said,
    );
    expect(sync.lines).toHaveLength(1);
  });
});
