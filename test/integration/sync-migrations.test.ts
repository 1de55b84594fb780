import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type AppWriters, startAppWriters } from '../support/app-writers.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import {
  createSourceDatabase,
  describeSources,
  type SourceDatabase,
  type SourceSession,
} from '../support/source-databases.ts';
import { seedSource, type SourceSnapshot } from '../support/source-seed.ts';
import { type RunningSync, servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * Migrations never hurt the app (docs/contract.md, section 9, "Schema changes never hurt the app"):
 * with the sync running as its own role and the app writing all along (projects inserted and
 * renamed, Sanctum's last_used_at, a cost changed), each kind of migration runs as Laravel runs it,
 * as the app's role: a column added, dropped, renamed and retyped, a table renamed, dropped and made
 * again, and migrate:fresh. Not one of the app's statements fails or waits long. Where a migration
 * takes away what the sync reads, the sync says which table and column in one line, once, keeps the
 * parts that need it as they were, and serves every other change within 10 s; once the schema gives
 * it back (and after setup again where PostgreSQL's publication must change), it serves what changed
 * meanwhile.
 */
const ADA = 'migrations-ada-token-01';
const BOB = 'migrations-bob-token-02';
/** Generous: an app statement that waits on a lock of the sync's waits far longer than this. */
const BLOCKED_MS = 2_000;

const daemon = (id: number, environment_id: number, server_id: number, name: string) => ({
  id,
  environment_id,
  server_id,
  name,
  command: 'php artisan queue:work',
  username: 'forge',
  directory: '/home/forge/app',
  processes: 1,
});

function laravelData(): SourceSnapshot {
  return {
    teams: [
      { id: 1, slug: 'acme', name: 'Acme', user_id: 10 },
      { id: 2, slug: 'globex', name: 'Globex', user_id: 11 },
      { id: 3, slug: 'busy', name: 'Busy', user_id: 10 },
    ],
    users: [
      { id: 10, name: 'Ada', teams: [1, 3] },
      { id: 11, name: 'Bob', teams: [1, 2] },
    ],
    tokens: [
      { id: 70, user_id: 10, token: ADA, abilities: ['*'] },
      { id: 71, user_id: 11, token: BOB, abilities: ['*'] },
    ],
    environments: [
      { id: 5, team_id: 1, name: 'production' },
      { id: 6, team_id: 2, name: 'production' },
    ],
    servers: [
      { id: 7, team_id: 1, name: 'web-1', monthly_cost: '10.00', currency: 'EUR' },
      { id: 8, team_id: 2, name: 'web-2', monthly_cost: '20.00', currency: 'EUR' },
    ],
    clients: [
      { id: 3, team_id: 1, name: 'Client A' },
      { id: 4, team_id: 2, name: 'Client B' },
    ],
    projects: [
      { id: 100, team_id: 1, client_id: 3, name: 'Site', slug: 'site' },
      { id: 200, team_id: 2, client_id: 4, name: 'Globex site', slug: 'globex-site' },
      { id: 300, team_id: 3, name: 'Busy 0', slug: 'busy-0' },
      { id: 301, team_id: 3, name: 'Busy 1', slug: 'busy-1' },
    ],
    daemons: [daemon(1, 5, 7, 'queue'), daemon(2, 6, 8, 'cron')],
    costs: [
      { id: 1, team_id: 1, label: 'Backups', amount: '5.00', currency: 'EUR' },
      { id: 2, team_id: 2, label: 'Support', amount: '3.00', currency: 'EUR' },
      { id: 3, team_id: 3, label: 'Busy', amount: '1.00', currency: 'EUR' },
    ],
  };
}

describeSources('migrations never hurt the app', (engine) => {
  let db: SourceDatabase;
  let table: TestTable;
  let api: ReturnType<typeof tableApi>;
  let sync: RunningSync;
  let app: AppWriters;
  /** Migrations' own statements, timed as the app's are. */
  const migrationTimes: { sql: string; ms: number }[] = [];
  const now = engine === 'postgres' ? 'now()' : 'NOW()';

  /** Migrations as Laravel runs them: the app's role, one connection, one statement at a time. */
  let migrator: SourceSession;
  const migrate = async (...statements: string[]) => {
    for (const sql of statements) {
      const started = performance.now();
      await migrator.query(sql);
      migrationTimes.push({ sql, ms: performance.now() - started });
    }
  };

  /** Ada is a member of acme and busy, Bob of acme and globex. */
  const get = (path: string, token = path.startsWith('/api/globex/') ? BOB : ADA) => api.get(path, { token });
  const projectNames = async (team: string) =>
    ((await get(`/api/${team}/projects?per_page=50`)).body?.data ?? []).map((p: { name: string }) => p.name);
  const daemonNames = async (team: string) =>
    ((await get(`/api/${team}/daemons`)).body?.data ?? []).map((d: { name: string }) => d.name);
  const total = async (team: string) => (await get(`/api/${team}/finances`)).body?.totals?.EUR;
  /** How the sync's run ended, if it did: it never should. */
  let ended = 'running';
  const said = () =>
    `the sync (${ended}) said: ${JSON.stringify(sync.lines)}; its last metrics: ${JSON.stringify(sync.metrics.slice(-3))}; app statements: ${app.done}`;
  const served = (check: () => Promise<boolean>, ms = 10_000) => servedWithin(check, ms, said);
  /** The lines said from now on. */
  const linesFrom = () => {
    const from = sync.lines.length;
    return () => sync.lines.slice(from);
  };
  /** An event of the sync, waited for at most `ms`. */
  const within = async (event: Promise<void>, ms: number, what: string) => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no ${what} within ${ms / 1000} s; ${said()}`)), ms);
    });
    await Promise.race([event, late]).finally(() => clearTimeout(timer));
  };
  /** Waits until the sync has said a line that matches, and returns it. */
  const saysLine = async (pattern: RegExp, lines: () => string[], ms = 10_000) => {
    await served(async () => lines().some((line) => pattern.test(line)), ms);
    return lines().find((line) => pattern.test(line))!;
  };

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, laravelData());
    await setUp(db);
    table = await freshTable();
    api = tableApi(table);
    // A schema that lacks what the mapping reads looked at again every turn of the run, not every 5 s: a
    // table or column given back is seen at once, where the log says nothing of it.
    sync = startSync(db, table, { schemaRecheckMs: 0 });
    sync.done.then(
      () => (ended = 'stopped'),
      (error: Error) => (ended = `ended: ${error.stack}`),
    );
    await sync.readyNow;
    migrator = await db.session();
    // The app, all along: projects of the busy team inserted and renamed, Sanctum's last_used_at on
    // every request, a cost line changed. Nothing a migration below takes away.
    app = await startAppWriters(
      db,
      2,
      (writer, n) => {
        switch (n % 4) {
          case 0:
            return {
              sql: `INSERT INTO projects (team_id, name, slug, created_at, updated_at) VALUES (3, $1, $1, ${now}, ${now})`,
              params: [`busy-${writer}-${n}`],
            };
          case 1:
            return {
              sql: 'UPDATE projects SET name = $1 WHERE id = $2',
              params: [`Busy ${writer} ${n}`, 300 + writer],
            };
          case 2:
            return {
              sql: `UPDATE personal_access_tokens SET last_used_at = ${now}, updated_at = ${now} WHERE id = $1`,
              params: [70 + writer],
            };
          default:
            return { sql: 'UPDATE costs SET amount = amount + 1 WHERE id = 3' };
        }
      },
      { paceMs: 10 },
    );
    await app.eachDoes(8);
  }, 60_000);

  afterAll(async () => {
    await migrator?.close();
    await app?.stop();
    await sync?.stop();
    await db?.drop();
  });

  /** After each migration: the app never failed, never waited long; the sync still runs. */
  const appUnharmed = async () => {
    await app.eachDoes(4); // the app went on writing after it
    expect(app.failures).toEqual([]);
    expect(app.slowest.ms, app.slowest.sql).toBeLessThan(BLOCKED_MS);
    for (const { sql, ms } of migrationTimes) expect(ms, sql).toBeLessThan(BLOCKED_MS);
    expect(ended).toBe('running');
  };

  it('a column added: nothing to say, every change served', async () => {
    const lines = linesFrom();
    await migrate('ALTER TABLE projects ADD COLUMN budget decimal(10, 2) NULL');
    await db.query(`UPDATE projects SET name = 'Site 2', budget = 12.5 WHERE id = 100`);
    await served(async () => (await projectNames('acme')).includes('Site 2'));
    await migrate('ALTER TABLE projects DROP COLUMN budget'); // a column the sync does not read
    await db.query(`UPDATE projects SET name = 'Site 3' WHERE id = 100`);
    await served(async () => (await projectNames('acme')).includes('Site 3'));
    expect(lines().filter((line) => /no longer/.test(line))).toEqual([]);
    await appUnharmed();
  });

  it('a column dropped that the sync reads: said once, its parts kept, the rest served; back, it follows', async () => {
    const lines = linesFrom();
    await migrate('ALTER TABLE daemons DROP COLUMN directory');
    await db.query(`UPDATE daemons SET name = 'queue 2' WHERE id = 1`);
    const line = await saysLine(/\bdaemons\.directory\b/, lines);
    expect(await daemonNames('acme')).toEqual(['queue']); // its last good state
    // Every other part, of this team and the others, is served as ever.
    await db.query(`UPDATE projects SET name = 'Globex site 2' WHERE id = 200`);
    await db.query(`UPDATE projects SET name = 'Site 4' WHERE id = 100`);
    await served(async () => (await projectNames('globex')).includes('Globex site 2'));
    await served(async () => (await projectNames('acme')).includes('Site 4'));
    await db.query(`UPDATE daemons SET name = 'queue 3' WHERE id = 1`);
    await db.query(`UPDATE projects SET name = 'Globex site 3' WHERE id = 200`);
    await served(async () => (await projectNames('globex')).includes('Globex site 3'));
    expect(await daemonNames('acme')).toEqual(['queue']);
    // Given back, as a migration gives a column back: the change made meanwhile is served.
    await migrate(`ALTER TABLE daemons ADD COLUMN directory varchar(255) NOT NULL DEFAULT '/srv/app'`);
    await saysLine(/answers every query of the mapping again/, lines, 20_000);
    await served(async () => (await daemonNames('acme')).includes('queue 3'));
    expect((await get('/api/acme/daemons')).body.data[0]).toMatchObject({ name: 'queue 3', directory: '/srv/app' });
    expect(lines().filter((l) => /\bdirectory\b/.test(l))).toEqual([line]);
    await appUnharmed();
  });

  it('a column renamed that the sync reads (costs.label), then back: said once, finance kept, then followed', async () => {
    const lines = linesFrom();
    expect(await total('acme')).toBe(15);
    await migrate('ALTER TABLE costs RENAME COLUMN label TO description');
    await db.query(`UPDATE costs SET amount = 6 WHERE id = 1`);
    const line = await saysLine(/\bcosts\.label\b/, lines);
    expect(await total('acme')).toBe(15); // its last good state
    // The finance of every team reads the costs; its other parts, and every other team's, are served.
    await db.query(`UPDATE projects SET name = 'Site 5' WHERE id = 100`);
    await db.query(`UPDATE projects SET name = 'Globex site 4' WHERE id = 200`);
    await served(async () => (await projectNames('acme')).includes('Site 5'));
    await served(async () => (await projectNames('globex')).includes('Globex site 4'));
    expect(await total('acme')).toBe(15);
    await migrate('ALTER TABLE costs RENAME COLUMN description TO label');
    await saysLine(/answers every query of the mapping again/, lines, 20_000);
    await served(async () => (await total('acme')) === 16);
    expect(lines().filter((l) => /\blabel\b/.test(l))).toEqual([line]);
    await appUnharmed();
  });

  it('a column retyped (abilities as JSON): nothing to say, tokens served', async () => {
    const lines = linesFrom();
    await migrate(
      engine === 'postgres'
        ? 'ALTER TABLE personal_access_tokens ALTER COLUMN abilities TYPE json USING abilities::json'
        : 'ALTER TABLE personal_access_tokens MODIFY abilities json NULL',
    );
    await db.query(`UPDATE personal_access_tokens SET abilities = '["finances:read"]' WHERE id = 71`);
    await served(async () => (await get('/api/globex/projects', BOB)).status === 403);
    expect((await get('/api/globex/finances', BOB)).status).toBe(200);
    await db.query(`UPDATE personal_access_tokens SET abilities = '["*"]' WHERE id = 71`);
    await served(async () => (await get('/api/globex/projects', BOB)).status === 200);
    expect(lines().filter((line) => /no longer/.test(line))).toEqual([]);
    await appUnharmed();
  });

  it('a table renamed (clients), then back: said once, projects kept, the rest served; back, it follows', async () => {
    const lines = linesFrom();
    const before = await projectNames('acme');
    await migrate('ALTER TABLE clients RENAME TO customers');
    await db.query(`UPDATE projects SET name = 'Site 6' WHERE id = 100`);
    const line = await saysLine(/\btable clients\b/, lines, 20_000);
    expect(await projectNames('acme')).toEqual(before);
    const globex = (await total('globex')) as number;
    await db.query(`UPDATE costs SET amount = amount + 1 WHERE id = 2`);
    await served(async () => (await total('globex')) === globex + 1);
    expect(await projectNames('acme')).toEqual(before);
    await migrate('ALTER TABLE customers RENAME TO clients');
    await saysLine(/answers every query of the mapping again/, lines, 20_000);
    await served(async () => (await projectNames('acme')).includes('Site 6'));
    expect(lines().filter((l) => /\bclients\b/.test(l))).toEqual([line]);
    await appUnharmed();
  });

  it('a table dropped and made again (environments): daemons kept, the rest served; after setup, it follows', async () => {
    const lines = linesFrom();
    const before = await daemonNames('globex');
    if (engine === 'postgres') await migrate('DROP TABLE environments CASCADE');
    else await migrate('SET FOREIGN_KEY_CHECKS = 0', 'DROP TABLE environments', 'SET FOREIGN_KEY_CHECKS = 1');
    await db.query(`UPDATE daemons SET name = 'cron 2' WHERE id = 2`);
    const line = await saysLine(/\btable environments\b/, lines, 20_000);
    expect(await daemonNames('globex')).toEqual(before);
    await db.query(`UPDATE projects SET name = 'Site 7' WHERE id = 100`);
    await served(async () => (await projectNames('acme')).includes('Site 7'));
    expect(await daemonNames('globex')).toEqual(before);
    // Made again as its migration makes it, with its rows.
    await migrate(
      ...schemaStatements(engine).filter((sql) => /^(create|alter) table ["`]environments["`]/.test(sql)),
      `INSERT INTO environments (id, team_id, name) VALUES (5, 1, 'production'), (6, 2, 'production')`,
    );
    await saysLine(/answers every query of the mapping again/, lines, 20_000);
    await served(async () => (await daemonNames('globex')).includes('cron 2'));
    // PostgreSQL's publication has the table that was dropped, not this one: the sync says to run setup.
    if (engine === 'postgres') await saysLine(/log no longer reports .*environments.*setup .*again/, lines);
    // A change of the table alone, before setup runs again; then setup.
    await db.query('DELETE FROM environments WHERE id = 6');
    const pass = sync.nextFullPass();
    await setUp(db);
    if (engine === 'postgres') await within(pass, 30_000, 'full pass after setup'); // the table published, read again whole
    await served(async () => (await daemonNames('globex')).length === 0);
    expect(lines().filter((l) => /\btable environments\b/.test(l))).toEqual([line]);
    await appUnharmed();
  });

  it('migrate:fresh: every table dropped and made again from the schema, seeded again: followed, nothing lost', async () => {
    // The app is down while migrate:fresh runs (its tables are gone): its statements would fail for that.
    await app.pause();
    const lines = linesFrom();
    const before = await projectNames('acme');
    const tables = [...TABLES].reverse().join(', ');
    if (engine === 'postgres') await migrate(`DROP TABLE ${tables} CASCADE`);
    else await migrate('SET FOREIGN_KEY_CHECKS = 0', `DROP TABLE ${tables}`, 'SET FOREIGN_KEY_CHECKS = 1');
    await saysLine(/the source no longer has what the mapping reads: table /, lines, 20_000);
    expect(await projectNames('acme')).toEqual(before);
    // The full pass that reads every table again: on PostgreSQL setup's (it publishes the new tables); on
    // MySQL the binlog's own (its DROP and CREATE say every team changed), which begins once the tables are
    // back, maybe before the seeding is over: waited for from before they are made.
    let pass = engine === 'mysql' ? sync.nextFullPass() : undefined;
    await migrate(...schemaStatements(engine));
    const seeded = laravelData();
    seeded.projects = [
      { id: 100, team_id: 1, client_id: 3, name: 'Fresh site', slug: 'site' },
      ...seeded.projects!.filter((project) => project.team_id === 3),
    ];
    await seedSource(db, seeded);
    pass ??= sync.nextFullPass();
    await setUp(db);
    await within(pass, 30_000, 'full pass after setup');
    await served(async () => String(await projectNames('acme')) === 'Fresh site');
    await served(
      async () => (await get('/api/globex/projects')).status === 200 && String(await projectNames('globex')) === '',
    );
    expect(await daemonNames('globex')).toEqual(['cron']);
    app.resume();
    await appUnharmed();
  });
});

const TABLES = [
  'users',
  'teams',
  'team_user',
  'personal_access_tokens',
  'environments',
  'servers',
  'clients',
  'projects',
  'daemons',
  'costs',
];

/** The statements of the Laravel schema, one by one (comments left out), as its migrations run them. */
function schemaStatements(engine: 'postgres' | 'mysql'): string[] {
  return readFileSync(new URL(`../support/laravel-schema.${engine}.sql`, import.meta.url), 'utf8')
    .replace(/^--.*$/gm, '')
    .split(/;\s*$/m)
    .map((statement) => statement.trim())
    .filter((statement) => statement.length > 0);
}
