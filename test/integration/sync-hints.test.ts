import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { NODE, ROOT } from '../support/import-process.ts';
import { startCommand } from '../support/processes.ts';
import { createSourceDatabase, type SourceDatabase, sourceServer } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { setUp } from '../support/sync.ts';

/**
 * `npm run sync` tells the truth in its hints and its process list (docs/contract.md, section 9,
 * "Commands that tell the truth"; docs/sync.md, "Faults"), run as the real command:
 *
 * - every hint that names a command repeats the `--mapping` the user gave: the refusal of a source not
 *   set up; the line said while running when the log no longer reports a table it reads; the end of a
 *   sync whose publication was dropped under it;
 * - the password given in `--source` is not in the process list: /proc/<pid>/cmdline shows `***`.
 *
 * PostgreSQL alone: a source "not set up" and a publication exist there (MariaDB's binary log needs no
 * setup), and the process title does not depend on the engine. `npm start -- --source`'s hints are
 * local-first-pass.test.ts's.
 */
const dir = mkdtempSync(join(tmpdir(), 'sync-hints-'));
/** A mapping file as a user gives it, relative to where they ran the command (INIT_CWD). */
writeFileSync(join(dir, 'mapping.json'), JSON.stringify({ queries: { users: 'SELECT id, name FROM users' } }));
const MAPPING = 'mapping.json';

function syncCommand(table: TestTable, args: string[]) {
  return startCommand(NODE, ['commands/sync.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, TABLE_NAME: table.tableName, DYNAMODB_ENDPOINT: table.endpoint, INIT_CWD: dir },
  });
}

/** The command line of a process this test started, as `ps` shows it to every user of the machine. */
const commandLine = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();

describe.skipIf(sourceServer('postgres').state === 'missing')('the hints of npm run sync (PostgreSQL)', () => {
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

  // One case, in order: the source is refused before setup, then set up and followed, then its publication dropped.
  it('name the --mapping given: the refusal of a source not set up, the line asking for setup again while it runs, the end when its publication is dropped; the password is never in its command line', async () => {
    const refused = syncCommand(await freshTable(), ['--source', db.syncUrl, '--mapping', MAPPING]);
    expect((await refused.exited).code, refused.output()).toBe(1);
    expect(refused.output()).toContain(`run npm run sync -- setup --source <url> --mapping ${MAPPING}`);
    expect(refused.output()).not.toContain(db.password);

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

      // The publication dropped under it (another's `sync remove`): it ends, naming setup with the mapping.
      await db.query('DROP PUBLICATION team_resources_sync');
      const { code } = await sync.exited;
      expect(code, sync.output()).toBe(1);
      expect(sync.output().trim().split('\n').at(-1)).toMatch(
        new RegExp(
          `publication team_resources_sync .*: run npm run sync -- setup --source <url> --mapping ${MAPPING}$`,
        ),
      );
      expect(sync.output()).not.toContain(db.password);
    } finally {
      sync.child.kill('SIGTERM');
      await sync.exited;
    }
  }, 90_000);
});
