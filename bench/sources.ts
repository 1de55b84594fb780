import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { SyncMetricValues } from '../shared/sync/metrics.ts';
import { freshTable, type TestTable } from '../test/support/dynamodb.ts';
import { createSourceDatabase, type SourceDatabase } from '../test/support/source-databases.ts';
import { type SourceSnapshot, seedSource } from '../test/support/source-seed.ts';
import { type SourceEngine, startMariaDb, startPostgres } from '../test/support/source-servers.ts';
export { SOURCE_ENGINES as ENGINES } from '../test/support/source-servers.ts';
import { processTree } from '../test/support/processes.ts';
import { setUp } from '../test/support/sync.ts';

/**
 * What the parts of the benchmark that need a source database share: its servers (started by the
 * bench, as the suite starts them: test/support/source-servers.ts), teams generated as a snapshot that
 * both seedSource and the import take, the sync as `npm run sync` runs it in a process of its own, and
 * the CPU each process of the bench's own took.
 */
export interface PartContext {
  quick: boolean;
  /** DynamoDB Local's endpoint. */
  endpoint: string;
  say(line: string): void;
}

/**
 * A server of that engine as the suite starts it (wal_level=logical; a row binlog), or with the
 * setting the log capture needs turned off (wal_level=replica; no binlog); MariaDB with its own
 * InnoDB memory and redo log, not the suite's small ones (source-servers.ts says why).
 */
export const startServer = (engine: SourceEngine, settingOff = false) =>
  engine === 'postgres'
    ? startPostgres(settingOff ? { walLevel: 'replica' } : {})
    : startMariaDb({ innodb: 'server', binlog: !settingOff });

interface TeamsSpec {
  teams: number;
  projects: number;
  daemons?: number;
  members?: number;
  /** Tokens of each member. */
  tokens?: number;
}

/** Project ids are odd, with a gap after each, so that one can be added in the middle; position i + 1. */
export const projectId = (team: number, i: number) => team * 10_000_000 + 2 * i + 1;
export const userId = (team: number, member: number) => team * 1_000 + member;
export const tokenId = (user: number, k = 0) => user * 100 + k;
export const secretOf = (token: number) => `bench-token-${token}`;
export const slugOf = (team: number) => `team-${team}`;

/** Teams 1 to `teams`, as a snapshot (contract section 7) that seedSource stores as Laravel would. */
export function benchTeams({ teams, projects, daemons = 0, members = 1, tokens = 1 }: TeamsSpec): SourceSnapshot {
  const ids = Array.from({ length: teams }, (_, i) => i + 1);
  const each = <T>(n: number, make: (team: number, i: number) => T) =>
    ids.flatMap((team) => Array.from({ length: n }, (_, i) => make(team, i)));
  return {
    teams: ids.map((id) => ({ id, slug: slugOf(id), name: `Team ${id}` })),
    users: each(members, (team, m) => ({ id: userId(team, m), name: `Member ${m} of team ${team}`, teams: [team] })),
    tokens: each(members * tokens, (team, j) => {
      const id = tokenId(userId(team, Math.floor(j / tokens)), j % tokens);
      return { id, user_id: userId(team, Math.floor(j / tokens)), token: secretOf(id), abilities: ['*'] };
    }),
    environments: ids.map((id) => ({ id, team_id: id, name: 'production' })),
    servers: ids.map((id) => ({ id, team_id: id, name: 'web-1', monthly_cost: '24.15', currency: 'EUR' })),
    projects: each(projects, (team, i) => ({
      id: projectId(team, i),
      team_id: team,
      name: `Project ${i + 1}`,
      slug: `project-${i + 1}`,
      created_at: '2026-01-02T03:04:05Z',
    })),
    daemons: each(daemons, (team, i) => ({
      id: team * 10_000_000 + i + 1,
      environment_id: team,
      server_id: team,
      name: `daemon-${i + 1}`,
      command: 'php artisan queue:work',
      username: 'forge',
      directory: '/home/forge/app',
      processes: 1,
    })),
    costs: ids.map((id) => ({ team_id: id, label: 'Backups', amount: '5.00', currency: 'EUR' })),
  };
}

export async function seededDatabase(
  server: { engine: SourceEngine; adminUrl: string },
  snapshot: SourceSnapshot,
): Promise<SourceDatabase> {
  const db = await createSourceDatabase(server.engine, { server });
  await seedSource(db, snapshot);
  return db;
}

/** A server of that engine, and a database of its own seeded with the snapshot, while `run` runs. */
export async function withDatabase<T>(
  engine: SourceEngine,
  snapshot: SourceSnapshot,
  run: (db: SourceDatabase, version: string) => Promise<T>,
): Promise<T> {
  const server = await startServer(engine);
  try {
    const db = await seededDatabase(server, snapshot);
    try {
      return await run(db, server.version);
    } finally {
      await db.drop();
    }
  } finally {
    await server.stop();
  }
}

type SyncProcess = Awaited<ReturnType<typeof syncProcess>>;

/**
 * `npm run sync` set up on the database and run over a fresh table of that DynamoDB endpoint while
 * `run` runs, once idle after its first full pass.
 */
export async function withSync<T>(
  db: SourceDatabase,
  endpoint: string,
  run: (sync: SyncProcess, table: TestTable) => Promise<T>,
): Promise<T> {
  const table = await freshTable(endpoint);
  await setUp(db);
  const sync = await syncProcess(db, table);
  try {
    await sync.idle();
    return await run(sync, table);
  } finally {
    await sync.stop();
  }
}

/** Polls `served` every 20 ms; the seconds from `since` (performance.now()) to the first time it holds. */
export async function servedAfter(since: number, served: () => Promise<boolean>, limitS = 120): Promise<number> {
  for (;;) {
    if (await served()) return (performance.now() - since) / 1000;
    if (performance.now() - since > limitS * 1000) throw new Error(`a change was not served within ${limitS} s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));
const SYNC_COMMAND = fileURLToPath(new URL('../commands/sync.ts', import.meta.url));

/**
 * `npm run sync` in a process of its own, as the sync's role, keeping the table in step: resolves once
 * its first full pass is done. stop() sends SIGTERM, as a deployment stops it. `niceness`: its CPU
 * priority (19, the lowest: the machine's CPU goes to everything else first).
 */
export async function syncProcess(
  db: SourceDatabase,
  table: { endpoint: string; tableName: string },
  niceness?: number,
) {
  // nice sets the priority, then becomes the sync (exec: the same pid). In a session of its own
  // (detached), with that session's nice too: where the kernel groups processes by session
  // (autogroup), it shares the CPU fairly between sessions before a process's nice counts, so nice
  // alone did not put the sync behind the database server, whose keeper starts a session of its own
  // (https://man7.org/linux/man-pages/man7/sched.7.html, "The autogroup feature").
  const command = niceness ? ['nice', '-n', String(niceness), process.execPath] : [process.execPath];
  const child = spawn(command[0]!, [...command.slice(1), SYNC_COMMAND], {
    detached: niceness !== undefined,
    env: {
      ...process.env,
      SOURCE_DATABASE_URL: db.syncUrl,
      TABLE_NAME: table.tableName,
      DYNAMODB_ENDPOINT: table.endpoint,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const group = `/proc/${child.pid}/autogroup`;
  if (niceness !== undefined && existsSync(group)) writeFileSync(group, String(niceness));
  // Detached, a Ctrl-C at the terminal no longer reaches it: the bench's exit stops it.
  const orphaned = () => child.kill();
  process.once('exit', orphaned);
  child.once('exit', () => process.off('exit', orphaned));
  // Its metric lines (shared/sync/metrics.ts), one a batch: the largest lag, and the changes applied.
  const metrics = { lagSeconds: 0, changes: 0, batches: 0 };
  createInterface({ input: child.stdout }).on('line', (line) => {
    const values = JSON.parse(line) as SyncMetricValues;
    if (!values.SyncChangesApplied) return;
    metrics.lagSeconds = Math.max(metrics.lagSeconds, values.SyncLag ?? 0);
    metrics.changes += values.SyncChangesApplied;
    metrics.batches += 1;
  });
  let said = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => (said = (said + text).slice(-20_000)));
  const closed = once(child, 'close');
  while (!/the first full pass is done/.test(said)) {
    if (child.exitCode !== null) throw new Error(`the sync ended before its first full pass: ${said.slice(-2_000)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const cpu = () => cpuOf(readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' '));
  return {
    pid: child.pid!,
    said: () => said,
    metrics,
    /**
     * Resolves once the sync has used less than 2% of a core for a second: a team written apart (a long
     * list) may still be written after the sync said its first full pass was done.
     */
    idle: async () => {
      for (let before = cpu(); ; ) {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        const now = cpu();
        if (now - before < 0.02) return;
        before = now;
      }
    },
    stop: async () => {
      child.kill('SIGTERM');
      await closed;
    },
  };
}

/** Seconds of CPU a process used, and seconds its threads waited on a run queue for a CPU. */
export interface Use {
  cpu: number;
  waited: number;
}

/**
 * What each process below this one used, by name (postgres, mariadbd, java, node…; this one is
 * "bench"): its CPU (user + system, and that of its children that ended: a database's backends come and
 * go), and the time its threads were ready to run but waited for a CPU (schedstat), which says how much
 * the machine's other jobs held it back. `root`: only the processes below that one (a server's keeper).
 */
export function usageByName(root = process.pid): Map<string, Use> {
  const totals = new Map<string, Use>();
  for (const { pid } of processTree(root)) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const name = pid === process.pid ? 'bench' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const [cpu, waited] = [cpuOf(stat.slice(stat.lastIndexOf(')') + 2).split(' ')), waitedOf(pid)];
      const total = totals.get(name) ?? { cpu: 0, waited: 0 };
      totals.set(name, { cpu: total.cpu + cpu, waited: total.waited + waited });
    } catch {
      // gone meanwhile
    }
  }
  return totals;
}

/** utime, stime, cutime, cstime of /proc/<pid>/stat's fields after the name. */
const cpuOf = (fields: string[]) => [11, 12, 13, 14].reduce((n, i) => n + Number(fields[i]), 0) / TICKS;
const waitedOf = (pid: number | string) =>
  readdirSync(`/proc/${pid}/task`).reduce((n, task) => {
    try {
      return n + Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[1]) / 1e9;
    } catch {
      return n;
    }
  }, 0);

/** The difference of two usageByName() readings, per second of `seconds`. */
export function usageBetween(before: Map<string, Use>, after: Map<string, Use>, seconds: number): Map<string, Use> {
  return new Map(
    [...after].map(([name, use]) => {
      const was = before.get(name) ?? { cpu: 0, waited: 0 };
      return [name, { cpu: (use.cpu - was.cpu) / seconds, waited: (use.waited - was.waited) / seconds }];
    }),
  );
}
