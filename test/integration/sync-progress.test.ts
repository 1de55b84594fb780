import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshTable } from '../support/dynamodb.ts';
import { NODE, ROOT } from '../support/import-process.ts';
import { startCommand } from '../support/processes.ts';
import { createSourceDatabase, type SourceDatabase, sourceServer } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { servedWithin } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * A first full pass longer than a few seconds shows its progress: teams and tokens done of the total,
 * on a terminal as a bar (like the import's), in a log a line then and one a minute after
 * (docs/contract.md, section 9, "Commands that tell the truth"; docs/sync.md, "Progress and metrics").
 * A few seconds and a minute are longer than a test: SYNC_PROGRESS_AFTER_MS and
 * SYNC_PROGRESS_EVERY_MS shorten them (docs/testing.md), here to nothing and to an hour. The terminal
 * is a pseudo-terminal (`script`), as in command-terminal.test.ts. Only the first pass shows it: the
 * full passes after it (`--full-pass-every`) are no first pass. What is shown does not depend on the
 * engine: PostgreSQL alone.
 */
const TEAMS = 25; // two of the full pass's batches of 20
const TOKENS = 3;

describe.skipIf(sourceServer('postgres').state === 'missing')(
  'the first full pass shows its progress (PostgreSQL)',
  () => {
    let db: SourceDatabase;

    beforeAll(async () => {
      db = await createSourceDatabase('postgres');
      await seedSource(db, {
        teams: Array.from({ length: TEAMS }, (_, i) => ({
          id: i + 1,
          slug: `t${i + 1}`,
          name: `Team ${i + 1}`,
          user_id: 1000 + i,
        })),
        users: Array.from({ length: TEAMS }, (_, i) => ({ id: 1000 + i, teams: [i + 1] })),
        tokens: Array.from({ length: TOKENS }, (_, i) => ({
          id: 70 + i,
          user_id: 1000,
          token: `progress-secret-${i}`,
        })),
      });
      // Not set up: --once needs no log, and a sync with --full-pass-every follows it by full passes alone.
    }, 60_000);
    afterAll(async () => {
      await db?.drop();
    });

    it('on a terminal: a bar of teams and tokens done of the total', async () => {
      const table = await freshTable();
      const line = `${[NODE, 'commands/sync.ts', '--once', '--source', db.syncUrl].map((a) => `'${a}'`).join(' ')}; echo EXIT=$?`;
      const command = startCommand('script', ['-q', '-c', line, '/dev/null'], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE,
          TERM: 'xterm',
          TABLE_NAME: table.tableName,
          DYNAMODB_ENDPOINT: table.endpoint,
          AWS_REGION: process.env.AWS_REGION,
          SYNC_PROGRESS_AFTER_MS: '0',
        },
      });
      await command.exited;
      const output = command.output();
      expect(output).toMatch(/EXIT=0\r?\n/);
      // The bar, as cli-progress draws it: its label, the bar, the share done and what is done of the total.
      expect(output).toMatch(/first full pass \[[=-]+\] \d+% teams \d+\/25, tokens \d+\/\d+/);
      expect(output).toContain(`100% teams ${TEAMS}/${TEAMS}, tokens ${TOKENS}/${TOKENS}`);
      // One bar for the whole pass (the tokens' total is known once the teams are done): drawn once,
      // never started again at 0% with the teams done.
      expect(output.split('\u001b[?25l')).toHaveLength(2);
      expect(output).not.toMatch(new RegExp(`\\] 0% teams ${TEAMS}/`));
      expect(output).toContain(`the table ${table.tableName} holds what the source holds`);
      expect(output).not.toContain(db.password);
    });

    it('in a log: one line, however many batches the pass reports, within the minute', async () => {
      const table = await freshTable();
      const command = startCommand(NODE, ['commands/sync.ts', '--once', '--source', db.syncUrl], {
        cwd: ROOT,
        env: {
          ...process.env,
          TABLE_NAME: table.tableName,
          DYNAMODB_ENDPOINT: table.endpoint,
          SYNC_PROGRESS_AFTER_MS: '0',
          SYNC_PROGRESS_EVERY_MS: String(3_600_000),
        },
      });
      const { code } = await command.exited;
      const output = command.output();
      expect(code, output).toBe(0);
      const lines = output.split('\n').filter((l) => l.startsWith('first full pass'));
      expect(lines).toEqual([`first full pass: teams 0/${TEAMS}, tokens 0/0`]);
      // No bar in a log: no cursor hidden, no line redrawn.
      expect(output).not.toMatch(/\u001b\[|\r/);
    });

    it('the full passes after the first show nothing of a first pass', async () => {
      const table = await freshTable();
      const command = startCommand(NODE, ['commands/sync.ts', '--source', db.syncUrl, '--full-pass-every', '10s'], {
        cwd: ROOT,
        env: {
          ...process.env,
          TABLE_NAME: table.tableName,
          DYNAMODB_ENDPOINT: table.endpoint,
          SYNC_PROGRESS_AFTER_MS: '0',
          SYNC_PROGRESS_EVERY_MS: '0',
        },
      });
      try {
        await command.waitFor('the first full pass is done', 60_000);
        const first = command.output().length;
        expect(command.output()).toContain(`first full pass: teams ${TEAMS}/${TEAMS}, tokens ${TOKENS}/${TOKENS}`);
        // The next pass finds a project added meanwhile: the API serves it.
        await db.query(
          `INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES (100, 1, 'Site', 'site', now(), now())`,
        );
        const api = tableApi(table);
        await servedWithin(
          async () => (await api.get('/api/t1/projects', { token: 'progress-secret-0' })).body?.meta?.total === 1,
          60_000,
        );
        expect(command.output().slice(first)).not.toContain('first full pass');
      } finally {
        command.child.kill('SIGTERM');
        await command.exited;
      }
    }, 90_000);
  },
);
