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
 * `npm run sync` tells the truth (docs/contract.md, section 9, "Commands that tell the truth"),
 * each rule run as the real command against the suite's servers:
 *
 * - `--once` exits 0 saying that the table holds what the source holds only when nothing was refused;
 *   when rows were refused (here every team, each for a bad row) it names them, says how many, exits 1.
 * - `token list` shows a Sanctum token's own `created_at`, as the source has it.
 *
 * Refusals do not depend on the engine: they run on PostgreSQL alone, to keep the suite fast. Reading
 * Sanctum's `created_at` does (a timestamp column is read by each engine's driver): both engines.
 * Hints and the process list are sync-hints.test.ts's.
 */
function syncCommand(table: TestTable, args: string[]) {
  return startCommand(NODE, ['commands/sync.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, TABLE_NAME: table.tableName, DYNAMODB_ENDPOINT: table.endpoint },
  });
}

/** A command run to its end: its exit code and everything it wrote. */
async function ran(table: TestTable, args: string[]) {
  const command = syncCommand(table, args);
  const { code, signal } = await command.exited;
  return { code: code ?? signal, output: command.output() };
}

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
