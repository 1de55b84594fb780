import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';
import { defaultMapping } from '../shared/sync/mapping.ts';
import { removeSetup } from '../shared/sync/setup.ts';
import { parseSourceUrl } from '../shared/sync/source/url.ts';
import { freshTable } from '../test/support/dynamodb.ts';
import { connectSource, type SourceDatabase, type SourceSession } from '../test/support/source-databases.ts';
import type { SourceEngine } from '../test/support/source-servers.ts';
import { setUp } from '../test/support/sync.ts';
import { processTree } from '../test/support/processes.ts';
import { tableApi } from '../test/support/table-api.ts';
import { ADD_PROJECT } from './one-team.ts';
import {
  benchTeams,
  type Use,
  usageBetween,
  usageByName,
  ENGINES,
  type PartContext,
  projectId,
  secretOf,
  seededDatabase,
  servedAfter,
  slugOf,
  startServer,
  syncProcess,
  tokenId,
  userId,
  withDatabase,
  withSync,
} from './sources.ts';

/**
 * The app's writes with the log capture beside it (docs/performance.md, "What the benchmark measures"):
 * the app's own statements, timed in interleaved rounds of the capture's states, on PostgreSQL and
 * MariaDB; and whether the sync keeps up with 16 writers committing as fast as they can.
 */
type State = 'none' | 'running' | 'stopped' | 'off';
const ORDER: State[] = ['none', 'running', 'stopped', 'off'];
export const STATE_NAMES: Record<State, string> = {
  none: 'not installed',
  running: 'installed, sync running',
  stopped: 'installed, sync stopped',
  off: 'server setting off',
};
const WRITERS = [1, 16];
const now = () => new Date().toISOString().slice(0, 19).replace('T', ' ');

type Op = (session: SourceSession, writer: number, k: number) => Promise<number>;
const workloads = (rows: number): [string, Op][] => [
  [
    'a project inserted',
    async (s, w, k) => {
      await s.query(
        'INSERT INTO projects (team_id, name, slug, created_at, updated_at) ' +
          'VALUES ($1, $2, $3, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)',
        [w + 1, `New ${k}`, `new-${k}`],
      );
      return 1;
    },
  ],
  [
    'a project renamed',
    async (s, w, k) => {
      await s.query('UPDATE projects SET name = $1, updated_at = CURRENT_TIMESTAMP WHERE id = $2', [
        `Renamed ${k}`,
        projectId(w + 1, (k * 7_919) % rows),
      ]);
      return 1;
    },
  ],
  [
    "Sanctum's last_used_at",
    async (s, w, k) => {
      const token = tokenId(userId(w + 1, k % 4), Math.floor(k / 4) % 16);
      await s.query('update personal_access_tokens set last_used_at = $1 where id = $2', [now(), token]);
      return 1;
    },
  ],
  [
    `${rows.toLocaleString('en')} projects in one UPDATE (rows/s)`,
    async (s, w, k) => {
      await s.query('UPDATE projects SET name = $1 WHERE id BETWEEN $2 AND $3', [
        `Bulk ${k}`,
        projectId(w + 1, 0),
        projectId(w + 1, rows - 1),
      ]);
      return rows;
    },
  ],
];

/**
 * What the sessions commit in `seconds`, each as fast as it can: rows a second, and statements that
 * succeeded; the errors counted by code (`label: code`).
 */
async function writeFor(sessions: SourceSession[], seconds: number, op: Op, errors: Map<string, number>, label = '') {
  const started = performance.now();
  let [rows, statements] = [0, 0];
  await Promise.all(
    sessions.map(async (session, w) => {
      for (let k = 0; performance.now() - started < seconds * 1_000; k++) {
        try {
          // Not `rows += await …`: that reads rows before the wait, and the writers overwrite each other's sums.
          const written = await op(session, w, Math.floor(started) + k);
          rows += written;
          statements += 1;
        } catch (error) {
          const { code, errno } = error as { code?: string; errno?: number };
          const key = `${label}${code === '40P01' || errno === 1213 ? 'deadlock' : String(code ?? errno ?? error)}`;
          errors.set(key, (errors.get(key) ?? 0) + 1);
        }
      }
    }),
  );
  return { rate: rows / ((performance.now() - started) / 1_000), statements };
}

interface ThroughputRow {
  engine: string;
  workload: string;
  writers: number;
  /** Per state, the figure of each round (commits or rows a second). */
  rounds: Record<State, number[]>;
  /** Per state and round, the database server's CPU per statement (ms). */
  cpu: Record<State, number[]>;
}

export interface EngineThroughput {
  engine: string;
  /** Rounds of the states, and seconds each statement ran in each. */
  rounds: number;
  seconds: number;
  rows: ThroughputRow[];
  errors: Record<State, Map<string, number>>;
  /** CPU and waiting for a CPU, seconds a second of wall time, by process, while each state's statements ran. */
  use: Record<State, Map<string, Use>>;
}

export async function measureThroughput(ctx: PartContext): Promise<EngineThroughput[]> {
  const rounds = ctx.quick ? 1 : 3;
  const seconds = ctx.quick ? 0.5 : 4;
  const rows = ctx.quick ? 1_000 : 10_000;
  const results: EngineThroughput[] = [];
  // The sync and DynamoDB Local at the lowest CPU priority (nice 19): in production they run on other
  // machines, so the database and the app's writers here get the CPU they ask for, and the ratios say
  // what the capture costs the database itself (its walsender or binlog dump thread runs in the server),
  // not what a sync beside the app on a 2-core machine takes from it. Pinning them to separate cores
  // instead left MariaDB's 16 writers on one core, where its spinning locks stalled the 10,000-row
  // UPDATEs for minutes.
  const java = processTree(process.pid).filter((p) => /(^|\/)java$/.test(p.command.split(' ')[0]!));
  // Linux keeps a priority per thread: each of Java's, and those it starts later inherit it.
  const renice = (pid: number, priority: number) => {
    for (const thread of readdirSync(`/proc/${pid}/task`)) setPriority(Number(thread), priority);
  };
  for (const { pid } of java) renice(pid, 19);
  try {
    for (const engine of ENGINES) results.push(await throughputOn(engine, ctx, { rounds, seconds, rows }));
  } finally {
    for (const { pid } of java) renice(pid, 0);
  }
  return results;
}

/** The CPU seconds a database server (its keeper's pid) has used. */
const databaseCpu = (keeper: number) => [...usageByName(keeper).values()].reduce((n, use) => n + use.cpu, 0);
const byState = <T>(make: () => T) => Object.fromEntries(ORDER.map((s) => [s, make()])) as Record<State, T>;

async function throughputOn(
  engine: SourceEngine,
  ctx: PartContext,
  { rounds, seconds, rows }: { rounds: number; seconds: number; rows: number },
): Promise<EngineThroughput> {
  const [server, bare] = await Promise.all([startServer(engine), startServer(engine, true)]);
  const dbs: SourceDatabase[] = [];
  const sessions: SourceSession[] = [];
  let sync: Awaited<ReturnType<typeof syncProcess>> | undefined;
  try {
    ctx.say(`${server.version}: 16 teams of ${rows.toLocaleString('en')} projects, on two servers...`);
    const data = benchTeams({ teams: 16, projects: rows, members: 4, tokens: 16 });
    const [db, bareDb] = await Promise.all([seededDatabase(server, data), seededDatabase(bare, data)]);
    dbs.push(db, bareDb);
    const connect = (url: string) => Promise.all(Array.from({ length: 16 }, () => connectSource(engine, url)));
    const [main, off] = [await connect(db.url), await connect(bareDb.url)];
    sessions.push(...main, ...off);
    const table = await freshTable(ctx.endpoint);
    const admin = parseSourceUrl(db.adminUrl);
    const remove = () =>
      removeSetup(admin, (shape) => defaultMapping(engine, shape), { say: () => {}, tableName: table.tableName });
    const enter: Record<State, () => Promise<unknown>> = {
      none: remove,
      running: async () => {
        await setUp(db);
        sync = await syncProcess(db, table, 19);
        await sync.idle();
      },
      stopped: async () => {
        await sync?.stop();
        sync = undefined;
      },
      off: async () => {},
    };
    const result: EngineThroughput = {
      engine: server.version,
      rounds,
      seconds,
      rows: workloads(rows).flatMap(([workload]) =>
        WRITERS.map((writers) => ({
          engine: server.version,
          workload,
          writers,
          rounds: byState((): number[] => []),
          cpu: byState((): number[] => []),
        })),
      ),
      errors: byState(() => new Map<string, number>()),
      use: byState(() => new Map<string, Use>()),
    };
    const spent = byState(() => 0);
    for (let round = 1; round <= rounds; round++) {
      for (const state of ORDER) {
        ctx.say(`${server.version}, round ${round} of ${rounds}: ${STATE_NAMES[state]}`);
        await enter[state]();
        const [before, started] = [usageByName(), performance.now()];
        let row = 0;
        for (const [workload, op] of workloads(rows)) {
          for (const writers of WRITERS) {
            const writing = (state === 'off' ? off : main).slice(0, writers);
            const keeper = (state === 'off' ? bare : server).pid;
            const cpu = databaseCpu(keeper);
            const { rate, statements } = await writeFor(
              writing,
              seconds,
              op,
              result.errors[state],
              `${workload}, ${writers}: `,
            );
            result.rows[row]!.rounds[state].push(rate);
            result.rows[row++]!.cpu[state].push(((databaseCpu(keeper) - cpu) * 1_000) / statements);
          }
        }
        spent[state] += (performance.now() - started) / 1_000;
        // The rows inserted go again (not timed), so that every round, and the sync's full pass as it
        // starts, meets the same data.
        await (state === 'off' ? off : main)[0]!.query("DELETE FROM projects WHERE name LIKE 'New %'");
        for (const [name, use] of usageBetween(before, usageByName(), 1)) {
          const was = result.use[state].get(name) ?? { cpu: 0, waited: 0 };
          result.use[state].set(name, { cpu: was.cpu + use.cpu, waited: was.waited + use.waited });
        }
      }
    }
    for (const state of ORDER) result.use[state] = usageBetween(new Map(), result.use[state], spent[state]);
    return result;
  } finally {
    await sync?.stop();
    await Promise.all(sessions.map((s) => s.close().catch(() => {})));
    await Promise.all(dbs.map((db) => db.drop()));
    await Promise.all([server.stop(), bare.stop()]);
  }
}

export interface KeepsUpRow {
  engine: string;
  writers: number;
  seconds: number;
  changes: number;
  errors: number;
  /** From the last commit to the API answering every writer's last change. */
  servedAfter: number;
  /** The sync's batches, its largest lag (from a change's commit to its batch's end). */
  batches: number;
  lagSeconds: number;
  /** From the first commit to all served: what each process used, and waited for a CPU, in seconds. */
  use: Map<string, Use>;
}

/**
 * 16 writers, each renaming projects of its own team and adding new ones, as fast as they commit, for
 * `seconds`, with `npm run sync` running; then the seconds until the API answers every writer's last
 * rename and every team's count of projects.
 */
export async function measureKeepsUp(ctx: PartContext): Promise<KeepsUpRow[]> {
  const seconds = ctx.quick ? 5 : 60;
  const [writers, projects] = [16, 1_000];
  const rows: KeepsUpRow[] = [];
  for (const engine of ENGINES) {
    await withDatabase(engine, benchTeams({ teams: writers, projects }), async (db, version) => {
      const sessions = await Promise.all(Array.from({ length: writers }, () => connectSource(engine, db.url)));
      ctx.say(`${version}: the sync's first full pass...`);
      try {
        await withSync(db, ctx.endpoint, async (sync, table) => {
          ctx.say(`${version}: ${writers} writers for ${seconds} s...`);
          const api = tableApi(table);
          const last = sessions.map(() => ({ position: 0, name: '', added: 0 }));
          const errors = new Map<string, number>();
          const [before, metricsBefore] = [usageByName(), { ...sync.metrics }];
          let changes = 0;
          await writeFor(
            sessions,
            seconds,
            async (session, w, k) => {
              if (k % 2) {
                await session.query(ADD_PROJECT, [projectId(w + 1, projects + last[w]!.added), w + 1, 'Added']);
                last[w]!.added += 1;
              } else {
                const [position, name] = [1 + ((k * 7_919) % projects), `Writer ${w} change ${k}`];
                await session.query('UPDATE projects SET name = $1 WHERE id = $2', [
                  name,
                  projectId(w + 1, position - 1),
                ]);
                last[w] = { ...last[w]!, position, name };
              }
              changes += 1;
              return 1;
            },
            errors,
          );
          const stopped = performance.now();
          const servedEach = last.map(() => false);
          const served = async () => {
            await Promise.all(
              last.map(async ({ position, name, added }, w) => {
                if (servedEach[w]) return;
                const target = `/api/${slugOf(w + 1)}/projects?per_page=1&page=${position}`;
                const { status, body } = await api.get(target, { token: secretOf(tokenId(userId(w + 1, 0))) });
                servedEach[w] = status === 200 && body.data[0].name === name && body.meta.total === projects + added;
              }),
            );
            return servedEach.every(Boolean);
          };
          rows.push({
            engine: version,
            writers,
            seconds,
            changes,
            errors: [...errors.values()].reduce((n, e) => n + e, 0),
            servedAfter: await servedAfter(stopped, served, 600),
            batches: sync.metrics.batches - metricsBefore.batches,
            lagSeconds: sync.metrics.lagSeconds,
            use: usageBetween(before, usageByName(), 1),
          });
        });
      } finally {
        await Promise.all(sessions.map((s) => s.close().catch(() => {})));
      }
    });
  }
  return rows;
}
