import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../commands/local/dynamodb-local.ts';
import { freshTable } from '../support/dynamodb.ts';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.ts';
import { NODE, ROOT } from '../support/import-process.ts';
import {
  type ProcessInfo,
  processInfo,
  processTree,
  signalIfStillRunning,
  startCommand,
} from '../support/processes.ts';
import { createSourceDatabase, type SourceDatabase, sourceServer } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * DynamoDB gone is said as DynamoDB, never as the source (docs/contract.md, section 9, "Bad data and
 * faults" and "Commands that tell the truth"; docs/commands.md, "npm start"):
 *
 * - the sync's write that finds nothing accepting connections at DynamoDB's endpoint fails with the
 *   network code a source that is down would give (ECONNREFUSED), and is told as DynamoDB failing; the
 *   sync's own code, in this process (test/support/sync.ts), through a proxy in front of the suite's
 *   DynamoDB Local that stops listening;
 * - `npm start -- --source`, its own DynamoDB Local (Java) killed during the first pass, says so and
 *   exits 1, blaming no source; its children's command lines show no password.
 *
 * Engine-independent: PostgreSQL alone. Only processes this file started are signalled.
 */
const SECRET = 'dynamodb-gone-secret1';
/** What would blame the source for what it did not do. */
const BLAMES_THE_SOURCE = /the source (does not answer|failed|refused)|the sync failed/;

/** Every process this file started, noted (pid and start time), and none outlives its case. */
let noted: ProcessInfo[] = [];
afterEach(() => {
  for (const p of noted) signalIfStillRunning(p, 'SIGKILL');
  noted = [];
});

/** The children of a process this file started, and theirs (test/support/processes.ts). */
function descendants(pid: number): ProcessInfo[] {
  const found = processTree(pid).filter((p) => p.pid !== pid);
  noted.push(...found);
  return found;
}

describe.skipIf(sourceServer('postgres').state === 'missing')('DynamoDB gone while the sync runs (PostgreSQL)', () => {
  let db: SourceDatabase;
  let proxy: FaultProxy;
  beforeAll(async () => {
    db = await createSourceDatabase('postgres');
    await seedSource(db, {
      teams: [{ id: 1, slug: 'acme', name: 'Acme', user_id: 10 }],
      users: [{ id: 10, name: 'Ada', teams: [1] }],
      tokens: [{ id: 70, user_id: 10, token: SECRET, abilities: ['*'] }],
    });
    await setUp(db);
    proxy = await startFaultProxy(inject('dynamodbEndpoint'));
  }, 60_000);
  afterAll(async () => {
    await proxy?.close();
    await db?.drop();
  });

  it('is said as DynamoDB failing, not as a source that does not answer; the change is served once it is back', async () => {
    const table = await freshTable(proxy.endpoint);
    const sync = startSync(db, table);
    try {
      await sync.readyNow;
      await proxy.set({ fault: 'refuse' });
      await db.query(
        `INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES (100, 1, 'Site', 'site', now(), now())`,
      );
      const said = () => sync.lines.filter((line) => /DynamoDB|the source does not answer/.test(line));
      await servedWithin(
        async () => said().length > 0,
        60_000,
        () => sync.lines.join('\n'),
      );
      expect(said()[0]).toMatch(/^DynamoDB failed \(.*ECONNREFUSED.*\); retrying$/);
      expect(sync.lines.join('\n')).not.toContain('the source does not answer');

      // Back, the change is served: nothing was lost meanwhile.
      await proxy.pass();
      const api = tableApi(table);
      await servedWithin(
        async () => (await api.get('/api/acme/projects', { token: SECRET })).body?.meta?.total === 1,
        30_000,
      );
    } finally {
      await sync.stop();
    }
  });
});

describe.skipIf(sourceServer('postgres').state === 'missing')(
  'npm start -- --source, its DynamoDB Local killed (PostgreSQL)',
  () => {
    let db: SourceDatabase;
    const TEAMS = 200;
    beforeAll(async () => {
      db = await createSourceDatabase('postgres');
      await seedSource(db, {
        teams: Array.from({ length: TEAMS }, (_, i) => ({
          id: i + 1,
          slug: `t${i + 1}`,
          name: `T${i + 1}`,
          user_id: 10,
        })),
        users: [{ id: 10, name: 'Ada', teams: Array.from({ length: TEAMS }, (_, i) => i + 1) }],
      });
      await setUp(db);
    }, 60_000);
    afterAll(async () => {
      await db?.drop();
    });

    it('during the first pass is said as DynamoDB Local, never as the source (exit 1)', async () => {
      const start = startCommand(
        NODE,
        ['commands/start.ts', '--source', db.syncUrl, '--port', String(await freePort())],
        {
          cwd: ROOT,
          env: {
            PATH: process.env.PATH,
            HOME: process.env.HOME,
            NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE,
            // Java on its quick compiler alone: half the CPU of DynamoDB Local's start.
            JAVA_TOOL_OPTIONS: '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC',
            LOG_LEVEL: 'silent',
            // The pass's first line as soon as it begins: the moment to kill Java.
            SYNC_PROGRESS_AFTER_MS: '0',
            SYNC_PROGRESS_EVERY_MS: '0',
          },
        },
      );
      noted.push(processInfo(start.child.pid!)!);
      await start.waitFor(`first full pass: teams 0/${TEAMS}`, 90_000);
      const started = descendants(start.child.pid!);
      // Its children (DynamoDB Local's keeper, Java) show no password either.
      for (const p of started) expect(p.command).not.toContain(db.password);
      const java = started.find((p) => p.command.startsWith('java ') && p.command.includes('DynamoDBLocal.jar'));
      expect(java, JSON.stringify(started)).toBeDefined();
      expect(signalIfStillRunning(java!, 'SIGKILL')).toBe(true);
      const exited = await start.exited;
      const output = start.output();
      expect(exited.code, output).toBe(1);
      expect(output).toContain('DynamoDB Local stopped (Java was killed by SIGKILL); its data was in memory: stopping');
      expect(output).not.toMatch(BLAMES_THE_SOURCE);
      expect(output).not.toContain('Team Resources API on');
    });
  },
);
