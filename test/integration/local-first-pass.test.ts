import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../commands/local/dynamodb-local.ts';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.ts';
import { NODE, ROOT } from '../support/import-process.ts';
import {
  type CommandProcess,
  type ProcessInfo,
  processInfo,
  processTree,
  signalIfStillRunning,
  startCommand,
} from '../support/processes.ts';
import {
  createSourceDatabase,
  describeSources,
  type SourceDatabase,
  sourceServer,
} from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { servedWithin, setUp } from '../support/sync.ts';

/**
 * `npm start -- --source <url>` while it loads (docs/contract.md, section 9, "Commands that tell the
 * truth"; docs/commands.md, "npm start"), run as the real command:
 *
 * - a source that refuses the credentials is said within 5 s, before DynamoDB Local starts; a source
 *   not set up is refused before it starts too, naming the setup command with the `--mapping` given;
 * - its port answers at once while the first full pass runs: `503 {"message":"Service Unavailable"}`
 *   with `Retry-After`, never a hang, until it says it is ready; then the API (200);
 * - the password is not in the process list (`/proc/<pid>/cmdline` shows `***`);
 * - a hint said while it runs (setup again, after a migration) repeats the `--mapping` given;
 * - Ctrl-C during the first pass says what it stopped, exits by the signal (130 in a shell), and blames
 *   no source.
 *
 * The first pass is held where it writes, deterministically: DYNAMODB_ENDPOINT is a proxy in front of
 * the suite's DynamoDB Local that holds the pass's writes until the test lets them go, so no case
 * starts Java (its DynamoDB Local killed is sync-dynamodb-gone.test.ts's). What is checked here does
 * not depend on the engine but for the credentials (each engine's own refusal): those on both, the
 * rest on PostgreSQL.
 * Only processes this file started are read in /proc or signalled.
 */
const dir = mkdtempSync(join(tmpdir(), 'local-first-pass-'));
writeFileSync(join(dir, 'mapping.json'), JSON.stringify({ queries: { users: 'SELECT id, name FROM users' } }));
const MAPPING = 'mapping.json';
const SECRET = 'first-pass-secret-001';
/** What the first full pass writes: its teams' items, in transactions and batches. */
const PASS_WRITES = ['TransactWriteItems', 'BatchWriteItem'];
/** What would blame the source for what it did not do. */
const BLAMES_THE_SOURCE = /the source (does not answer|failed|refused)|the sync failed/;

/** Every process this test started is noted (pid and start time), and none outlives its case. */
let noted: ProcessInfo[] = [];
afterEach(() => {
  for (const p of noted) signalIfStillRunning(p, 'SIGKILL');
  noted = [];
});

/** The children of a process this test started, and theirs (test/support/processes.ts). */
function descendants(pid: number): ProcessInfo[] {
  const found = processTree(pid).filter((p) => p.pid !== pid);
  noted.push(...found);
  return found;
}

function npmStart(args: string[], env: Record<string, string | undefined>, from = ROOT): CommandProcess {
  const command = startCommand(NODE, ['commands/start.ts', ...args], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE,
      // Java on its quick compiler alone: half the CPU of DynamoDB Local's start.
      JAVA_TOOL_OPTIONS: '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC',
      LOG_LEVEL: 'silent',
      INIT_CWD: from,
      ...env,
    },
  });
  const info = processInfo(command.child.pid!);
  if (info) noted.push(info);
  return command;
}

describeSources('npm start -- --source, a source that refuses the credentials', (engine) => {
  let db: SourceDatabase;
  beforeAll(async () => {
    db = await createSourceDatabase(engine);
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  it('is said in one line within 5 s, before DynamoDB Local starts (exit 1)', async () => {
    const wrong = new URL(db.syncUrl);
    wrong.password = 'wrong-password';
    const started = performance.now();
    const start = npmStart(['--source', wrong.href, '--port', String(await freePort())], {});
    // Whatever it starts meanwhile: no Java, no DynamoDB Local keeper.
    const seen: ProcessInfo[] = [];
    while (start.child.exitCode === null && start.child.signalCode === null) {
      seen.push(...descendants(start.child.pid!));
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const { code } = await start.exited;
    const elapsed = performance.now() - started;
    expect(code, start.output()).toBe(1);
    expect(elapsed).toBeLessThan(5_000);
    expect(start.output()).toMatch(/^the source refused the credentials \((postgres|mysql):\/\/[^:]+:\*\*\*@[^)]+\): /);
    expect(start.output().trim().split('\n')).toHaveLength(1);
    expect(start.output()).not.toContain('wrong-password');
    expect(start.output()).not.toContain('DynamoDB Local');
    expect(seen.map((p) => p.command)).toEqual([]);
  });
});

describe.skipIf(sourceServer('postgres').state === 'missing')('npm start -- --source (PostgreSQL)', () => {
  let db: SourceDatabase;
  let proxy: FaultProxy;
  beforeAll(async () => {
    db = await createSourceDatabase('postgres');
    await seedSource(db, {
      teams: [
        { id: 1, slug: 'acme', name: 'Acme', user_id: 10 },
        { id: 2, slug: 'globex', name: 'Globex', user_id: 10 },
      ],
      users: [{ id: 10, name: 'Ada', teams: [1, 2] }],
      tokens: [{ id: 70, user_id: 10, token: SECRET, abilities: ['*'] }],
      projects: [{ id: 100, team_id: 1, name: 'Site', slug: 'site' }],
    });
    proxy = await startFaultProxy(inject('dynamodbEndpoint'));
  }, 60_000);
  afterAll(async () => {
    await proxy?.close();
    await db?.drop();
  });

  /** npm start through the proxy, into a table of its own, the pass's writes held until let go. */
  async function heldStart(args: string[]) {
    await proxy.set({ fault: 'hold', operations: PASS_WRITES });
    const port = await freePort();
    const start = npmStart(
      ['--source', db.syncUrl, '--port', String(port), ...args],
      { DYNAMODB_ENDPOINT: proxy.endpoint, TABLE_NAME: `first-pass-${port}` },
      dir,
    );
    // The first pass has begun, and waits on its first write.
    await servedWithin(
      async () => proxy.held > 0 || start.child.exitCode !== null,
      60_000,
      () => start.output(),
    );
    expect(start.child.exitCode, start.output()).toBeNull();
    return { start, url: `http://127.0.0.1:${port}` };
  }

  // The contract's 5 s is for credentials refused (the case above); a source not set up has no time of its
  // own, only its order: refused before anything else starts.
  it('refuses a source not set up before DynamoDB Local starts, naming setup with the --mapping given', async () => {
    const start = npmStart(['--source', db.syncUrl, '--port', String(await freePort()), '--mapping', MAPPING], {}, dir);
    const { code } = await start.exited;
    expect(code, start.output()).toBe(1);
    expect(start.output()).toContain(`run npm run sync -- setup --source <url> --mapping ${MAPPING}`);
    expect(start.output()).not.toContain('DynamoDB Local');
    expect(start.output()).not.toContain(db.password);
  });

  it('answers 503 with Retry-After at once while the first pass runs, says when it is ready, then serves; ps never shows the password; a hint names the --mapping given', async () => {
    await setUp(db);
    const { start, url } = await heldStart(['--mapping', MAPPING]);
    try {
      const shown = readFileSync(`/proc/${start.child.pid}/cmdline`, 'utf8').split('\0').join(' ');
      expect(shown).toContain(`${new URL(db.syncUrl).username}:***@`);
      expect(shown).not.toContain(db.password);

      const answer = await fetch(`${url}/api/acme/projects`, {
        headers: { authorization: `Bearer ${SECRET}` },
        signal: AbortSignal.timeout(10_000),
      });
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(await answer.text()).toBe('{"message":"Service Unavailable"}');
      // Answered while the pass was still held: before the command said it was ready.
      expect(proxy.held).toBeGreaterThan(0);
      expect(start.output()).not.toContain('Team Resources API on');

      await proxy.pass();
      await start.waitFor('stops the API', 60_000);
      expect(start.output()).toMatch(/synced 2 teams from postgres:\/\/[^:]+:\*\*\*@/);
      const served = await fetch(`${url}/api/acme/projects`, { headers: { authorization: `Bearer ${SECRET}` } });
      expect(served.status).toBe(200);

      // A migration makes a table the sync reads anew, out of the publication: the hint names the mapping.
      await db.query('DROP TABLE costs');
      await db.query(
        'CREATE TABLE costs (id bigserial PRIMARY KEY, team_id bigint NOT NULL, label varchar(255) NOT NULL, ' +
          'amount decimal(20, 6) NOT NULL, currency varchar(3) NOT NULL, created_at timestamp(0) NULL, updated_at timestamp(0) NULL)',
      );
      await start.waitFor(`run npm run sync -- setup --source <url> --mapping ${MAPPING} again`, 30_000);
      expect(start.output()).not.toContain(db.password);
    } finally {
      start.child.kill('SIGTERM');
      await start.exited;
    }
  });

  it('stopped by Ctrl-C during the first pass, says it stopped the first pass, exits by SIGINT, and blames no source', async () => {
    await setUp(db);
    const { start } = await heldStart([]);
    expect(signalIfStillRunning(processInfo(start.child.pid!)!, 'SIGINT')).toBe(true);
    // Its writes let go, as DynamoDB would answer them.
    await proxy.pass();
    const exited = await start.exited;
    const output = start.output();
    expect(exited.signal, output).toBe('SIGINT');
    expect(output).toMatch(
      /^SIGINT: stopped before the API was ready; the first full pass from postgres:\/\/[^:]+:\*\*\*@\S+ stopped at 0 of 2 teams; each team in DYNAMODB_ENDPOINT's table is whole, as it was or as the source has it$/m,
    );
    expect(output).not.toMatch(BLAMES_THE_SOURCE);
    expect(output).not.toContain('Team Resources API on');
  });
});
