import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getItems } from '../../shared/write/reads.ts';
import { TeamLocks } from '../../shared/write/team-locks.ts';
import { ledgerPartitions, syncLeaseKey, teamLockKey } from '../../shared/table/keys.ts';
import { freshTable, scanAll, type TestTable } from '../support/dynamodb.ts';
import { NODE, ROOT } from '../support/import-process.ts';
import { legacySetupStatements } from '../support/legacy-capture.ts';
import { signalIfStillRunning, processInfo, startCommand } from '../support/processes.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { servedWithin, setUp } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * `npm run sync` as a platform team runs it (docs/contract.md, sections 8 and 9): setup, run by the
 * app's role (the tables' owner), installs nothing in the app's schema (on PostgreSQL a publication,
 * and REPLICA IDENTITY FULL where the sync needs old rows; on MySQL nothing), removes what the
 * earlier trigger-based version installed, says what it did, and can run again; the sync itself runs
 * as its own role with exactly what the contract allows it (db.syncUrl); --once loads and exits 0; a
 * bad command line is one line and the usage (exit 2); credentials the source refuses end it at once
 * (exit 1), the password never shown; a sync killed with SIGKILL at any moment and started again
 * completes what it was doing, no team half-written, nothing left behind; SIGTERM stops it with its
 * leases given back.
 */
const SECRET = 'command-secret-token1';
const PROJECTS = 3_000;

function runSync(table: TestTable, args: string[]) {
  return spawnSync(NODE, ['commands/sync.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, TABLE_NAME: table.tableName, DYNAMODB_ENDPOINT: table.endpoint },
    encoding: 'utf8',
    timeout: 90_000,
  });
}

function startSyncCommand(table: TestTable, url: string) {
  return startCommand(NODE, ['commands/sync.ts', '--source', url], {
    cwd: ROOT,
    env: { ...process.env, TABLE_NAME: table.tableName, DYNAMODB_ENDPOINT: table.endpoint },
  });
}

describe('npm run sync, its command line', () => {
  it.each([
    [[], /^npm run sync: name the source database: --source <url> \(or SOURCE_DATABASE_URL\)\nusage: /],
    [['--source', 'ftp://x/db'], /^npm run sync: --source: ftp:\/\/x\/db: the source must be postgres:\/\/, /],
    [['--source', 'postgres://u:secret@h/db', '--timezone', 'Mars/Olympus'], /--timezone must be a time zone/],
    [['frobnicate', '--source', 'postgres://u:p@h/db'], /unknown command "frobnicate" \(use setup, remove, or none/],
    [['setup', '--once', '--source', 'postgres://u:p@h/db'], /--once does not apply to setup/],
  ])('refuses %j with one line and the usage (exit 2)', (args, message) => {
    const run = spawnSync(NODE, ['commands/sync.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, SOURCE_DATABASE_URL: '' },
      encoding: 'utf8',
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).not.toContain('secret');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('answers --help with the usage, exit 0', () => {
    const run = spawnSync(NODE, ['commands/sync.ts', '--help'], { cwd: ROOT, encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('npm run sync -- setup --source <url>');
  });
});

describeSources('npm run sync', (engine) => {
  let db: SourceDatabase;
  const now = engine === 'postgres' ? 'now()' : 'NOW()';

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, {
      teams: [{ id: 1, slug: 'big', name: 'Big', user_id: 10 }],
      users: [{ id: 10, name: 'Ada', teams: [1] }],
      tokens: [{ id: 70, user_id: 10, token: SECRET, abilities: ['*'] }],
      projects: Array.from({ length: PROJECTS }, (_, i) => ({
        id: 1 + i,
        team_id: 1,
        name: `Project ${i + 1}`,
        slug: `p${i + 1}`,
        created_at: '2026-01-02T03:04:05Z',
      })),
    });
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  /** What the app's schema holds: its tables, triggers, functions and procedures (and events, on MySQL). */
  async function appSchema() {
    const names = async (sql: string) => (await db.adminQuery<{ name: string }>(sql)).map((row) => row.name).sort();
    if (engine === 'postgres') {
      return {
        tables: await names("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'"),
        triggers: await names(
          "SELECT tgname AS name FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal AND c.relnamespace = 'public'::regnamespace",
        ),
        routines: await names("SELECT proname AS name FROM pg_proc WHERE pronamespace = 'public'::regnamespace"),
      };
    }
    return {
      tables: await names('SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()'),
      triggers: await names(
        'SELECT TRIGGER_NAME AS name FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()',
      ),
      routines: await names(
        'SELECT ROUTINE_NAME AS name FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() ' +
          'UNION ALL SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = DATABASE()',
      ),
    };
  }
  /** PostgreSQL: what setup may make instead, a publication of the tables read and their replica identities. */
  const publication = async () => ({
    published: (
      await db.adminQuery<{ name: string }>(
        "SELECT tablename AS name FROM pg_publication_tables WHERE pubname = 'team_resources_sync' ORDER BY 1",
      )
    ).map((row) => row.name),
    full: (
      await db.adminQuery<{ name: string }>(
        "SELECT relname AS name FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' AND relreplident = 'f' ORDER BY 1",
      )
    ).map((row) => row.name),
  });

  it('sets up as the tables owner, installing nothing in the app schema and removing the earlier capture; says what it did, and again', async () => {
    const table = await freshTable();
    const schema = await appSchema();
    expect(schema.triggers).toEqual([]);
    expect(schema.routines).toEqual([]);
    if (engine === 'postgres') {
      // Not set up: the sync, as its own role, names the setup command.
      const before = runSync(table, ['--source', db.syncUrl]);
      expect(before.status).toBe(1);
      expect(before.stderr).toMatch(
        /is not prepared for the sync \(the publication team_resources_sync does not exist\): run npm run sync -- setup --source <url>/,
      );
      expect(before.stderr).not.toContain(db.password);
    }
    // A source the earlier, trigger-based version prepared, as its setup did it (as the app's role).
    for (const statement of legacySetupStatements(engine)) await db.query(statement);
    expect((await appSchema()).triggers.length).toBeGreaterThan(20);

    const setup = runSync(table, ['setup', '--source', db.url]);
    expect(setup.status, setup.stderr).toBe(0);
    expect(setup.stdout).not.toContain(db.password);
    if (engine === 'postgres') {
      expect(setup.stdout).toMatch(
        /^set up the source \(.*\*\*\*@.*\) for the sync:\n {2}created the publication team_resources_sync\n/,
      );
      // The cost of a FULL identity is said.
      expect(setup.stdout).toContain(
        'projects: REPLICA IDENTITY FULL; the WAL now holds the old row of every UPDATE and DELETE of projects too',
      );
      expect(setup.stdout).toContain("removed the earlier capture's triggers on teams (team_resources_teams_delete");
      expect(setup.stdout).toContain("removed the earlier capture's functions (team_resources_capture_clients");
      expect(setup.stdout).toContain(
        "removed the earlier capture's tables (team_resources_changes, team_resources_sync)",
      );
    } else {
      expect(setup.stdout).toMatch(
        /^the source \(.*\*\*\*@.*\) is ready for the sync: its binary log is read as a replica reads it; nothing was installed\n/,
      );
      expect(setup.stdout).toContain('dropped the trigger team_resources_teams_insert on teams');
      expect(setup.stdout).toContain('dropped the table team_resources_changes');
      expect(setup.stdout).toContain('dropped the table team_resources_sync');
    }
    // The app's schema is as it was before the earlier version was installed: no trigger, function,
    // procedure or table of the sync's. On PostgreSQL, a publication of the ten tables read.
    expect(await appSchema()).toEqual(schema);
    const made = engine === 'postgres' ? await publication() : undefined;
    if (made) {
      expect(made.published).toEqual([
        'clients',
        'costs',
        'daemons',
        'environments',
        'personal_access_tokens',
        'projects',
        'servers',
        'team_user',
        'teams',
        'users',
      ]);
      // FULL only where a change reaches its team through a column other than the key.
      expect(made.full).not.toContain('teams');
      expect(made.full).not.toContain('users');
      expect(made.full).not.toContain('personal_access_tokens');
      expect(made.full).toContain('projects');
    }
    // The app's writes run as before; the sync's role reads the source as setup left it.
    await db.query(`UPDATE projects SET name = 'Project 1' WHERE id = 1`);

    const again = runSync(table, ['setup', '--source', db.url]);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).not.toMatch(/removed|dropped|created/);
    if (engine === 'postgres') {
      expect(again.stdout).toContain('nothing to do: the publication team_resources_sync publishes');
      expect(await publication()).toEqual(made);
    }
    expect(await appSchema()).toEqual(schema);
  });

  it('loads the source with --once and exits 0', async () => {
    await setUp(db);
    const table = await freshTable();
    const once = runSync(table, ['--once', '--source', db.syncUrl]);
    expect(once.status, once.stderr).toBe(0);
    expect(once.stderr).toContain(`the table ${table.tableName} holds what the source holds`);
    const page = await tableApi(table).get('/api/big/projects?per_page=1&page=3000', { token: SECRET });
    expect(page.body.data[0].name).toBe('Project 3000');
  });

  it('exits 1 at once, in one line, when the source refuses the credentials', async () => {
    const wrong = new URL(db.syncUrl);
    wrong.password = 'wrong-password';
    const run = runSync(await freshTable(), ['--source', wrong.toString()]);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/^syncing .*\nthe source refused the credentials \(.*:\*\*\*@/);
    expect(run.stderr).not.toContain('wrong-password');
    expect(run.stderr.trim().split('\n')).toHaveLength(2);
  });

  it('killed with SIGKILL while it writes, and started again, completes: every page whole, nothing left behind', async () => {
    await setUp(db); // as the tests before did, should this one run alone
    const table = await freshTable();
    const api = tableApi(table);
    const names = async () => {
      const first = await api.get('/api/big/projects?per_page=1&page=1', { token: SECRET });
      const last = await api.get(`/api/big/projects?per_page=1&page=${PROJECTS}`, { token: SECRET });
      return `${first.body?.data?.[0]?.name} .. ${last.body?.data?.[0]?.name}`;
    };
    let sync = startSyncCommand(table, db.syncUrl);
    await servedWithin(async () => (await api.get('/api/big/projects', { token: SECRET })).status === 200, 60_000);
    // Three renames of every project, each killed at a different point of its write.
    for (const [round, delayMs] of [
      [1, 100],
      [2, 400],
      [3, 900],
    ] as const) {
      await db.query(`UPDATE projects SET name = CONCAT('Round ${round} ', id), updated_at = ${now}`);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      const info = processInfo(sync.child.pid!);
      if (info) signalIfStillRunning(info, 'SIGKILL');
      await sync.exited;
      // Whatever the kill left, readers see one state of the list: every page of one round.
      const seen = await names();
      expect(seen).toMatch(/^(Project 1 \.\. Project 3000|Round (\d) 1 \.\. Round \2 3000)$/);
      sync = startSyncCommand(table, db.syncUrl);
      await servedWithin(async () => (await names()) === `Round ${round} 1 .. Round ${round} 3000`, 30_000);
    }
    const pending = (await scanAll(table)).filter(
      (item) => ledgerPartitions().includes(String(item.pk)) && String(item.sk).startsWith('P#'),
    );
    expect(pending).toEqual([]);
    // SIGTERM: it stops between two writes and gives its leases back. (The round may have been
    // served by the sync killed before it: this one is signalled once it holds the lease.)
    await servedWithin(async () => {
      const [lease] = await getItems(table.doc, table.tableName, [syncLeaseKey()], { consistent: true });
      return lease?.pid === sync.child.pid;
    }, 30_000);
    const pid = sync.child.pid;
    sync.child.kill('SIGTERM');
    const exited = await sync.exited;
    expect(exited.code ?? exited.signal).not.toBe('SIGKILL');
    // Nothing of its own is left. The team's writers' lock of a sync killed earlier may be (this one
    // wrote nothing, so never needed it): the next writer takes it over at once, its holder being dead.
    // Its lease stays, run out, carrying where it was in the log (for the next sync to go on from).
    const left = await getItems(table.doc, table.tableName, [syncLeaseKey(), teamLockKey(1)], { consistent: true });
    expect(left.filter((item) => item.pid === pid && item.pk !== syncLeaseKey().pk)).toEqual([]);
    expect(left.filter((item) => item.pid === pid && Number(item.expires_at) > Date.now())).toEqual([]);
    const next = new TeamLocks(table, 'the-next-writer', 'import');
    const waited: string[] = [];
    await next.lock(1, (line) => void waited.push(line));
    expect(waited).toEqual([]);
    await next.releaseAll();
  }, 240_000);
});

describeSources('npm start -- --source', (engine) => {
  let db: SourceDatabase;
  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, {
      teams: [{ id: 1, slug: 'acme', name: 'Acme', user_id: 10 }],
      users: [
        { id: 10, name: 'Ada', teams: [1] },
        { id: 11, name: 'Bob', teams: [1] },
      ],
      projects: [{ id: 100, team_id: 1, name: 'Site', slug: 'site', created_at: '2026-01-02T03:04:05Z' }],
    });
    await setUp(db);
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  it('serves the source, prints a token for --user, and serves a change made there; Ctrl-C stops it all', async () => {
    const start = startCommand(NODE, ['commands/start.ts', '--source', db.syncUrl, '--user', '11', '--port', '0'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DYNAMODB_ENDPOINT: undefined,
        TABLE_NAME: undefined,
        LOG_LEVEL: 'silent',
        // Its DynamoDB Local's Java on the quick compiler alone, as the other command tests start theirs
        // (test/support/global-setup.ts says why): half the CPU of its start.
        JAVA_TOOL_OPTIONS: '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC',
      },
    });
    try {
      const out = await start.waitFor('stops the API and DynamoDB Local.', 120_000);
      expect(out).toMatch(/synced 1 team from (postgres|mysql):\/\/.*:\*\*\*@/);
      expect(out).not.toContain(db.password);
      expect(out).toContain('demo token for user 11 (Bob)');
      const url = /Team Resources API on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)![1];
      const token = /shown once:\n\s+(\S+)/.exec(out)![1];
      const names = async () => {
        const res = await fetch(`${url}/api/acme/projects`, { headers: { authorization: `Bearer ${token}` } });
        return ((await res.json()) as { data: { name: string }[] }).data.map((p) => p.name);
      };
      expect(await names()).toEqual(['Site']);
      const now = engine === 'postgres' ? 'now()' : 'NOW()';
      await db.query(
        `INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES (101, 1, 'Blog', 'blog', ${now}, ${now})`,
      );
      await servedWithin(async () => (await names()).includes('Blog'));
    } finally {
      start.child.kill('SIGINT');
    }
    const exited = await start.exited;
    expect(exited.code).toBe(0);
  }, 180_000);

  it('refuses --data with --source, and --mapping without --source (exit 2)', () => {
    const both = spawnSync(NODE, ['commands/start.ts', '--source', db.url, '--data', 'x.json'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(both.status).toBe(2);
    expect(both.stderr).toMatch(/^npm start: give --data or --source, not both/);
    const mapping = spawnSync(NODE, ['commands/start.ts', '--mapping', 'm.json'], { cwd: ROOT, encoding: 'utf8' });
    expect(mapping.status).toBe(2);
    expect(mapping.stderr).toMatch(/^npm start: --mapping goes with --source/);
  });
});
