import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { NODE, ROOT } from '../support/import-process.ts';
import { startCommand } from '../support/processes.ts';
import {
  createSourceDatabase,
  describeSources,
  type SourceDatabase,
  sourceServer,
} from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { setUp } from '../support/sync.ts';

/**
 * `npm run sync` tells the truth (docs/contract.md, section 9, "Commands that tell the truth"; issue
 * #40), each rule run as the real command against the suite's servers:
 *
 * - `--once` exits 0 saying that the table holds what the source holds only when nothing was refused;
 *   when rows were refused (here every team, each for a bad row) it names them, says how many, exits 1.
 * - every hint that names a command repeats the `--mapping` the user gave: the refusal of a source not
 *   set up, and the line said while running when the log no longer reports a table it reads.
 * - the password given in `--source` is not in the process list: /proc/<pid>/cmdline shows `***`.
 * - `token list` shows a Sanctum token's own `created_at`, as the source has it.
 *
 * Refusals, hints and the process title do not depend on the engine: they run on PostgreSQL alone
 * (where "not set up" exists: MariaDB's binary log needs no setup), to keep the suite fast. Reading
 * Sanctum's `created_at` does (a timestamp column is read by each engine's driver): both engines.
 */
const dir = mkdtempSync(join(tmpdir(), 'sync-truth-'));
/** A mapping file as a user gives it, relative to where they ran the command (INIT_CWD). */
writeFileSync(join(dir, 'mapping.json'), JSON.stringify({ queries: { users: 'SELECT id, name FROM users' } }));
const MAPPING = 'mapping.json';

function syncCommand(table: TestTable, args: string[]) {
  return startCommand(NODE, ['commands/sync.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, TABLE_NAME: table.tableName, DYNAMODB_ENDPOINT: table.endpoint, INIT_CWD: dir },
  });
}

/** A command run to its end: its exit code and everything it wrote. */
async function ran(table: TestTable, args: string[]) {
  const command = syncCommand(table, args);
  const { code, signal } = await command.exited;
  return { code: code ?? signal, output: command.output() };
}

/** The command line of a process this test started, as `ps` shows it to every user of the machine. */
const commandLine = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();

/** PostgreSQL alone where the engine does not matter. */
const onPostgres = describe.skipIf(sourceServer('postgres').state === 'missing');

onPostgres('sync --once and the rows it refused (PostgreSQL)', () => {
  let db: SourceDatabase;

  beforeAll(async () => {
    db = await createSourceDatabase('postgres');
    // Every team refused, each for a bad row: its own, or one of its projects (a team the table
    // does not hold yet is created only once all of it keeps the rules).
    await seedSource(db, {
      teams: [
        { id: 1, slug: 'acme', name: 'Acme\u0007', user_id: 10 },
        { id: 2, slug: 'globex', name: 'Globex', user_id: 10 },
      ],
      users: [{ id: 10, name: 'Ada', teams: [1, 2] }],
      projects: [
        { id: 200, team_id: 2, name: 'Site', slug: 'site' },
        { id: 201, team_id: 2, name: 'Bad\u001b[2J', slug: 'bad' },
      ],
    });
    await setUp(db);
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  it('names every row refused, says how many, and exits 1; once they are fixed, exits 0 saying the table holds what the source holds', async () => {
    const table = await freshTable();
    const refused = await ran(table, ['--once', '--source', db.syncUrl]);
    expect(refused.code, refused.output).toBe(1);
    expect(refused.output).toContain(
      `the table ${table.tableName} holds what the source holds but for 2 rows the rules refuse, kept at their last good state:`,
    );
    expect(refused.output).toContain('  teams 1: name contains a control character');
    expect(refused.output).toContain('  projects 201: name contains a control character');
    expect(refused.output).not.toMatch(/holds what the source holds$/m);
    expect(refused.output).not.toContain(db.password);

    await db.query(`UPDATE teams SET name = 'Acme' WHERE id = 1`);
    await db.query(`UPDATE projects SET name = 'Blog' WHERE id = 201`);
    const fixed = await ran(table, ['--once', '--source', db.syncUrl]);
    expect(fixed.code, fixed.output).toBe(0);
    expect(fixed.output).toMatch(new RegExp(`^the table ${table.tableName} holds what the source holds$`, 'm'));
    expect(fixed.output).not.toContain('refuse');
  }, 60_000);
});

onPostgres('the hints of npm run sync (PostgreSQL)', () => {
  let db: SourceDatabase;

  beforeAll(async () => {
    db = await createSourceDatabase('postgres');
    await seedSource(db, {
      teams: [{ id: 1, slug: 'acme', name: 'Acme', user_id: 10 }],
      users: [{ id: 10, name: 'Ada', teams: [1] }],
      costs: [{ team_id: 1, label: 'Hosting', amount: '10.00', currency: 'EUR' }],
    });
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  // One case, in order: the source is refused before setup, then set up and followed.
  it('name the --mapping given: the refusal of a source not set up, and the line asking for setup again while it runs; the password is never in its command line', async () => {
    const refused = await ran(await freshTable(), ['--source', db.syncUrl, '--mapping', MAPPING]);
    expect(refused.code, refused.output).toBe(1);
    expect(refused.output).toContain(`run npm run sync -- setup --source <url> --mapping ${MAPPING}`);
    expect(refused.output).not.toContain(db.password);

    await setUp(db);
    const sync = syncCommand(await freshTable(), ['--source', db.syncUrl, '--mapping', MAPPING]);
    try {
      await sync.waitFor('the first full pass is done', 60_000);
      // What every user of the machine sees of it (ps): the URL with *** for the password.
      const shown = commandLine(sync.child.pid!);
      expect(shown).toContain(`${new URL(db.syncUrl).username}:***@`);
      expect(shown).not.toContain(db.password);

      // A migration drops a table the sync reads and makes it again: a new table to PostgreSQL, out of the publication.
      await db.query('DROP TABLE costs');
      await db.query(
        'CREATE TABLE costs (id bigserial PRIMARY KEY, team_id bigint NOT NULL, label varchar(255) NOT NULL, ' +
          'amount decimal(20, 6) NOT NULL, currency varchar(3) NOT NULL, created_at timestamp(0) NULL, updated_at timestamp(0) NULL)',
      );
      await sync.waitFor("the source's log no longer reports", 30_000);
      const line = sync
        .output()
        .split('\n')
        .find((l) => l.includes("the source's log no longer reports"));
      expect(line).toContain(`run npm run sync -- setup --source <url> --mapping ${MAPPING} again`);
    } finally {
      sync.child.kill('SIGTERM');
      await sync.exited;
    }
  }, 90_000);
});

describeSources('token list after a sync', (engine) => {
  let db: SourceDatabase;

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, {
      teams: [{ id: 1, slug: 'acme', name: 'Acme', user_id: 10 }],
      users: [{ id: 10, name: 'Ada', teams: [1] }],
      tokens: [{ id: 70, user_id: 10, token: 'created-at-secret-01', name: 'deploy', abilities: ['*'] }],
    });
    await db.query(`UPDATE personal_access_tokens SET created_at = '2024-01-02 03:04:05' WHERE id = 70`);
    await setUp(db);
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  it("shows a Sanctum token's own created_at, not when the sync loaded it", async () => {
    const table = await freshTable();
    const once = await ran(table, ['--once', '--source', db.syncUrl]);
    expect(once.code, once.output).toBe(0);
    const list = startCommand(NODE, ['commands/token.ts', 'list', '--user', '10'], {
      cwd: ROOT,
      env: { ...process.env, TABLE_NAME: table.tableName, DYNAMODB_ENDPOINT: table.endpoint },
    });
    const { code } = await list.exited;
    expect(code, list.output()).toBe(0);
    const [header, row] = list.output().trim().split('\n');
    const created = header!.indexOf('CREATED');
    expect(row!.slice(created).split(/\s{2,}/)[0]).toBe('2024-01-02T03:04:05+00:00');
    expect(row).toContain('deploy');
  });
});
