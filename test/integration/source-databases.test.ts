import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshTable } from '../support/dynamodb.ts';
import { CHANGES_TABLE, legacySetupStatements } from '../support/legacy-capture.ts';
import { isRunning, processTree, waitUntilGone } from '../support/processes.ts';
import { environment, projects, server, team, token, user } from '../support/snapshots.ts';
import {
  connectSource,
  createSourceDatabase,
  describeSources,
  sourceServer,
  type SourceDatabase,
} from '../support/source-databases.ts';
import { seedSource, sha256 } from '../support/source-seed.ts';
import { startMariaDb, startPostgres, type RunningServer, type SourceEngine } from '../support/source-servers.ts';
import { servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * The ground the sync's tests stand on: real PostgreSQL and MariaDB servers started by the suite,
 * databases with the Laravel schema, an application role with what contract section 9 allows and no
 * more, the sync's own role with exactly what the running sync may have, the earlier version's trigger
 * capture for the tests that upgrade from it, and the seed helper. Each engine's tests are skipped
 * where its server is not installed.
 */

const SECRET = 'plain-secret-of-ada';
/** A small team: an owner (Ada, 10) and a member (Bob, 11), with one of each resource. */
const SMALL_TEAM = {
  teams: [{ ...team(1, 'acme', 'Acme'), user_id: 10 }],
  users: [user(10, [1], 'Ada'), user(11, [1], 'Bob')],
  tokens: [
    { ...token(10, SECRET, ['projects:read']), id: 5, expires_at: '2027-01-01T02:00:00+02:00' },
    { user_id: 11, token_sha256: sha256('bobs-secret'), name: 'ci', abilities: ['*'] },
  ],
  environments: [environment(5, 1)],
  servers: [server(7, 1, '24.15')],
  clients: [{ id: 3, team_id: 1, name: 'Client A' }],
  projects: [{ ...projects(1, 1, 100)[0]!, client_id: 3, created_at: '2026-01-02T05:04:05.999+02:00' }],
  daemons: [
    {
      id: 1,
      environment_id: 5,
      server_id: 7,
      name: 'queue',
      command: 'php artisan queue:work',
      username: 'forge',
      directory: '/home/forge/site',
      processes: 2,
    },
  ],
  // Five decimals: more than the contract allows, which the column keeps for the sync to refuse.
  costs: [{ team_id: 1, label: 'Backups', amount: '5.00001', currency: 'EUR' }],
};

describeSources('a source database', (engine) => {
  let db: SourceDatabase;
  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, SMALL_TEAM);
  });
  afterAll(async () => db?.drop());

  it('holds a seeded team as Laravel stores it, read back alike on both engines', async () => {
    expect(await db.query('SELECT id, user_id, name, slug, personal_team FROM teams')).toEqual([
      { id: '1', user_id: '10', name: 'Acme', slug: 'acme', personal_team: false },
    ]);
    // Jetstream keeps the owner in teams.user_id alone: only Bob has a team_user row.
    expect(await db.query('SELECT team_id, user_id, role FROM team_user')).toEqual([
      { team_id: '1', user_id: '11', role: 'editor' },
    ]);
    expect(
      await db.query(
        'SELECT id, tokenable_type, tokenable_id, name, token, abilities, expires_at FROM personal_access_tokens ORDER BY id',
      ),
    ).toEqual([
      {
        id: '5',
        tokenable_type: 'App\\Models\\User',
        tokenable_id: '10',
        name: 'token of 10',
        token: sha256(SECRET),
        abilities: '["projects:read"]',
        expires_at: '2027-01-01 00:00:00',
      },
      {
        id: '6',
        tokenable_type: 'App\\Models\\User',
        tokenable_id: '11',
        name: 'ci',
        token: sha256('bobs-secret'),
        abilities: '["*"]',
        expires_at: null,
      },
    ]);
    expect(await db.query('SELECT id, client_id, slug, created_at, updated_at FROM projects')).toEqual([
      {
        id: '100',
        client_id: '3',
        slug: 'project-100',
        created_at: '2026-01-02 03:04:05',
        updated_at: '2026-01-01 00:00:00',
      },
    ]);
    expect(await db.query('SELECT monthly_cost, currency FROM servers')).toEqual([
      { monthly_cost: '24.150000', currency: 'EUR' },
    ]);
    expect(await db.query('SELECT label, amount FROM costs')).toEqual([{ label: 'Backups', amount: '5.000010' }]);
    expect(
      await db.query('SELECT processes, command FROM daemons WHERE environment_id = $1 AND server_id = $1 + 2', [5]),
    ).toEqual([{ processes: 2, command: 'php artisan queue:work' }]);
  });

  it('lets Eloquent-style inserts without an id follow the seeded ids', async () => {
    await db.query('INSERT INTO clients (team_id, name) VALUES ($1, $2)', [1, 'Client B']);
    expect(await db.query('SELECT id FROM clients ORDER BY id')).toEqual([{ id: '3' }, { id: '4' }]);
  });

  it("cascades a team's deletion to what it owns, and a client's to its projects' client_id", async () => {
    const other = await createSourceDatabase(engine);
    try {
      await seedSource(other, SMALL_TEAM);
      await other.query('DELETE FROM clients WHERE id = $1', [3]);
      expect(await other.query('SELECT client_id FROM projects')).toEqual([{ client_id: null }]);
      await other.query('DELETE FROM teams WHERE id = $1', [1]);
      for (const table of ['environments', 'servers', 'projects', 'daemons', 'costs'])
        expect(await other.query(`SELECT id FROM ${table}`), table).toEqual([]);
    } finally {
      await other.drop();
    }
  });

  it('gives the application role what the contract allows, and no superuser', async () => {
    if (engine === 'postgres') {
      expect(
        await db.query(
          'SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls FROM pg_roles WHERE rolname = current_user',
        ),
      ).toEqual([
        { rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolreplication: false, rolbypassrls: false },
      ]);
      // It owns the database and every table, having created them as Laravel's migrations would.
      expect(
        await db.query('SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = current_database()'),
      ).toEqual([{ owner: db.user }]);
      const owners = await db.query<{ tableowner: string }>(
        "SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public'",
      );
      expect(owners).toEqual([{ tableowner: db.user }]);
    } else {
      expect(grants(await db.query('SHOW GRANTS'))).toEqual([
        `GRANT USAGE ON *.* TO \`${db.user}\`@\`%\` IDENTIFIED BY PASSWORD '*'`,
        `GRANT ALL PRIVILEGES ON \`${db.database}\`.* TO \`${db.user}\`@\`%\``,
      ]);
    }
  });

  it('refuses a wrong password over TCP', async () => {
    const wrong = new URL(db.url);
    wrong.password = 'not-the-password';
    await expect(connectSource(engine, wrong.href)).rejects.toThrow(
      engine === 'postgres' ? `password authentication failed for user "${db.user}"` : /Access denied for user/,
    );
  });

  it('adds replication to the role only when asked', async () => {
    const replicating = await createSourceDatabase(engine, { replication: true, schema: false });
    try {
      if (engine === 'postgres')
        expect(
          await replicating.query('SELECT rolsuper, rolreplication FROM pg_roles WHERE rolname = current_user'),
        ).toEqual([{ rolsuper: false, rolreplication: true }]);
      else
        expect(grants(await replicating.query('SHOW GRANTS'))[0]).toBe(
          `GRANT RELOAD, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO \`${replicating.user}\`@\`%\` IDENTIFIED BY PASSWORD '*'`,
        );
    } finally {
      await replicating.drop();
    }
  });

  it('runs with the settings the contract asks of the source', async () => {
    if (engine === 'postgres') expect(await db.query('SHOW wal_level')).toEqual([{ wal_level: 'logical' }]);
    else
      expect(
        await db.query('SELECT @@log_bin AS log_bin, @@binlog_format AS format, @@binlog_row_image AS image'),
      ).toEqual([{ log_bin: '1', format: 'ROW', image: 'FULL' }]);
  });

  it("lets the application role install the earlier version's trigger capture, which records a change", async () => {
    // As that version's setup did it (legacy-capture.ts): what setup now removes (sync-command.test.ts).
    const other = await createSourceDatabase(engine);
    try {
      await seedSource(other, SMALL_TEAM);
      for (const statement of legacySetupStatements(engine)) await other.query(statement);
      await other.query('UPDATE projects SET name = $1 WHERE id = $2', ['Renamed', 100]);
      expect(await other.query(`SELECT DISTINCT part, ref FROM ${CHANGES_TABLE}`)).toEqual([
        { part: 'projects', ref: '1' },
      ]);
    } finally {
      await other.drop();
    }
  });

  it("gives the sync's own role exactly what the running sync may have: it reads, and reads the log, nothing more", async () => {
    const sync = await connectSource(engine, db.syncUrl);
    try {
      if (engine === 'postgres') {
        expect(
          await sync.query(
            'SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls FROM pg_roles WHERE rolname = current_user',
          ),
        ).toEqual([
          { rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolreplication: true, rolbypassrls: false },
        ]);
        // SELECT on every table, and no other privilege on any; nothing created, nothing owned.
        const privileges = ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER'];
        const held = await sync.query<{ privilege: string }>(
          `SELECT DISTINCT p.privilege FROM pg_tables t CROSS JOIN unnest($1::text[]) p(privilege)
            WHERE t.schemaname = 'public' AND has_table_privilege(format('%I', t.tablename), p.privilege)`,
          [privileges],
        );
        expect(held).toEqual([{ privilege: 'SELECT' }]);
        expect(
          await sync.query(
            "SELECT has_database_privilege(current_database(), 'CREATE') AS db, has_schema_privilege('public', 'CREATE') AS schema",
          ),
        ).toEqual([{ db: false, schema: false }]);
        // A table the app's migrations add later is readable too (the owner's default privileges).
        await db.query('CREATE TABLE added_later (id bigint PRIMARY KEY)');
        expect(await sync.query('SELECT count(*)::int AS n FROM added_later')).toEqual([{ n: 0 }]);
        await db.query('DROP TABLE added_later');
      } else {
        // MariaDB shows REPLICATION CLIENT by its name since 10.5, BINLOG MONITOR.
        expect(grants(await sync.query('SHOW GRANTS'))).toEqual([
          `GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO \`${db.user}_sync\`@\`%\` IDENTIFIED BY PASSWORD '*'`,
          `GRANT SELECT ON \`${db.database}\`.* TO \`${db.user}_sync\`@\`%\``,
        ]);
      }
      // It reads; it writes nothing, and installs nothing.
      expect(await sync.query('SELECT name FROM projects')).toEqual([{ name: expect.any(String) }]);
      const refused = engine === 'postgres' ? /permission denied/ : /command denied to user/;
      await expect(sync.query('UPDATE projects SET name = $1', ['Written'])).rejects.toThrow(refused);
      await expect(sync.query('CREATE TABLE sync_changes (id bigint PRIMARY KEY)')).rejects.toThrow(refused);
      await expect(
        sync.query(
          engine === 'postgres'
            ? "CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END'"
            : 'CREATE TRIGGER touch BEFORE UPDATE ON projects FOR EACH ROW SET NEW.name = NEW.name',
        ),
      ).rejects.toThrow(refused);
    } finally {
      await sync.close();
    }
  });

  it('drops a database whose role still holds a transaction open', async () => {
    const other = await createSourceDatabase(engine);
    const session = await other.session();
    await session.query(engine === 'postgres' ? 'BEGIN' : 'START TRANSACTION');
    await session.query('SELECT count(*) AS n FROM teams');
    await other.drop();
    await session.close().catch(() => {}); // ended by the drop
    expect(await databasesNamed(engine, other.database)).toEqual([]);
  });
});

describe('servers a test starts with other settings', () => {
  describe.skipIf(sourceServer('postgres').state === 'missing')('PostgreSQL', () => {
    it('runs on the wal_level asked, and leaves no process or directory behind once stopped', async () => {
      const pg = await startPostgres({ walLevel: 'replica' });
      const processes = processTree(pg.pid);
      try {
        const db = await createSourceDatabase('postgres', { server: pg, schema: false });
        expect(await db.query('SHOW wal_level')).toEqual([{ wal_level: 'replica' }]);
        await db.drop();
      } finally {
        await expectGoneAfterStop(pg, processes);
      }
    });
  });

  describe.skipIf(sourceServer('mysql').state === 'missing')('MariaDB', () => {
    // "When binary logging is enabled, creating a stored function or a trigger needs the SUPER privilege,
    // unless log_bin_trust_function_creators is set" (error 1419:
    // https://mariadb.com/docs/server/reference/error-codes/mariadb-error-codes-1400-to-1499/e1419): the
    // earlier, trigger-based version needed it. The sync now needs no such setting.
    it('without log_bin_trust_function_creators (a trigger refused to a role without SUPER), is set up and followed by the sync', async () => {
      const mariadb = await startMariaDb({ trustFunctionCreators: false });
      const processes = processTree(mariadb.pid);
      try {
        const db = await createSourceDatabase('mysql', { server: mariadb });
        await expect(
          db.query('CREATE TRIGGER touch BEFORE UPDATE ON projects FOR EACH ROW SET NEW.name = NEW.name'),
        ).rejects.toThrow(/You do not have the SUPER privilege and binary logging is enabled/);
        await seedSource(db, { ...SMALL_TEAM, costs: [] }); // (its cost line's 5 decimals would hold the team back)
        await setUp(db);
        const table = await freshTable();
        const sync = startSync(db, table);
        try {
          await sync.readyNow;
          await db.query('UPDATE projects SET name = $1 WHERE id = $2', ['Renamed', 100]);
          const names = async () =>
            (await tableApi(table).get('/api/acme/projects', { token: SECRET })).body.data?.map(
              (project: { name: string }) => project.name,
            );
          let last: unknown;
          await servedWithin(
            async () => {
              last = await names();
              return String(last) === 'Renamed';
            },
            10_000,
            () => `last ${JSON.stringify(last)}; the sync said ${JSON.stringify(sync.lines)}`,
          );
        } finally {
          await sync.stop();
        }
        await db.drop();
      } finally {
        await expectGoneAfterStop(mariadb, processes);
      }
    });
  });
});

/** SHOW GRANTS lines, the password hash masked. */
function grants(rows: Record<string, unknown>[]): string[] {
  return rows.map((row) => String(Object.values(row)[0]).replace(/PASSWORD '[^']*'/, "PASSWORD '*'"));
}

async function databasesNamed(engine: SourceEngine, name: string) {
  const admin = await createSourceDatabase(engine, { schema: false });
  try {
    return engine === 'postgres'
      ? await admin.adminQuery('SELECT datname FROM pg_database WHERE datname = $1', [name])
      : await admin.adminQuery('SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = $1', [name]);
  } finally {
    await admin.drop();
  }
}

async function expectGoneAfterStop(server: RunningServer, processes: ReturnType<typeof processTree>) {
  // The keeper, the server and (PostgreSQL) its workers: all started by this test.
  expect(processes.length).toBeGreaterThanOrEqual(2);
  await server.stop();
  expect((await waitUntilGone(processes, 10_000)).map((p) => p.command)).toEqual([]);
  expect(processes.filter(isRunning)).toEqual([]);
  expect(existsSync(server.dir)).toBe(false);
}
