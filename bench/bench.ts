import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PROJECT_ROOT } from '../infra/functions.ts';
import { benchTeam, type BenchTeam } from './data.ts';
import { measureDepth, type DepthCell } from './depth.ts';
import { benchEnvironment, loadAverage } from './environment.ts';
import { coldStart, cpuRatio, lambdaEnvironment, rotatingWarmRuns, silentRatio, synthBundles, warmRatio, warmRequests, type Bundle, type ColdSample, type WarmSamples } from './functions.ts';
import { importTeam, type ImportRun } from './import.ts';
import { importGigabyte, type GigabyteRun } from './gigabyte.ts';
import { int, kb, markdownTable, median, ms, quantile, ratio, ratio3, spread } from './stats.ts';
import { measureFloor, type FloorRow } from './floor.ts';
import { benchEvents } from './events.ts';
import { ensureTable } from '../commands/store/table.ts';
import { startBenchDynamo } from './dynamo.ts';

/**
 * npm run bench: the storage and start-up guarantees, measured on this machine against DynamoDB
 * Local, printed and written to bench/RESULTS.md (see bench/README.md for what each figure means).
 *
 *   1. Depth and size: page 1, a middle page and the last page of teams of 1,000, 10,000 and
 *      100,000 projects (and as many daemons), against reading the whole team and slicing.
 *   2. Import: items per second, with the progress display.
 *   3. Cold start of each production bundle against a bare handler bundled the same way.
 *   4. Warm overhead of each handler against the bare handler making the same DynamoDB calls.
 *   5. A 1 GB snapshot imported by the real command: items per second and its peak resident memory.
 *
 * --quick runs small teams and few samples (a smoke test; it does not write RESULTS.md).
 * --import-gb sets the size of part 5's snapshot (1 by default; 0.02 with --quick).
 */
const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, out: { type: 'string' }, 'import-gb': { type: 'string' } } });
const QUICK = args.quick!;
const IMPORT_BYTES = Number(args['import-gb'] ?? (QUICK ? 0.02 : 1)) * 1e9;
const SIZES = QUICK ? [1_000, 5_000] : [1_000, 10_000, 100_000];
const PER_PAGE = 50;
const DEPTH_SAMPLES = QUICK ? 40 : 300;
const baselineSamples = (team: BenchTeam) => (QUICK ? 3 : team.size <= 1_000 ? 60 : team.size <= 10_000 ? 15 : 5);
/** Warm: each run is a fresh process timing the function and its bare twin alternately. */
const WARM = QUICK ? { warmup: 50, samples: 100 } : { warmup: 200, samples: 300 };
const WARM_RUNS = QUICK ? 3 : 15;
const COLD_ROUNDS = QUICK ? 4 : 30;
/** Ratio targets (issue "Every request at the floor"): met when the median of the runs is at or under it. */
const RATIO_TARGET = 1.05;
const FLOOR_SAMPLES = QUICK ? 10 : 50;
const OUT = args.out ?? join(PROJECT_ROOT, 'bench', 'RESULTS.md');
const TABLE = 'bench';
const GIGABYTE_TABLE = 'bench-gigabyte';
const ASSEMBLY = join(PROJECT_ROOT, 'cdk.out', 'bench');

/**
 * On-demand read price: USD per million read request units, us-east-1, standard table class, as
 * published since DynamoDB's on-demand price cut of November 2024 (AWS pricing page; AWS News
 * Blog post on on-demand, updated 31 January 2025). One read request unit is one strongly
 * consistent read of up to 4 KB or two eventually consistent ones: ConsumedCapacity's units.
 */
const PRICE_PER_MILLION_RRU = 0.125;
const PRICE_SOURCE = 'US$0.125 per million read request units (on-demand, us-east-1, standard table class; the price since the November 2024 reduction)';

const TWIN_LIST = 'bare twin: BatchGetItem, then Query';
const TWIN_FINANCES = 'bare twin: BatchGetItem';
const SOURCE_MAPS_LABEL = 'projects, NODE_OPTIONS=--enable-source-maps';
const HTTP_IMPORT_LABEL = 'projects, node:http as an ES import';
/** The bare twin making a function's own calls at its cold start (its first request). */
const coldTwin = (name: string) => (name === 'projects' || name === 'daemons' ? TWIN_LIST : name === 'finances' ? TWIN_FINANCES : undefined);
/** Round i of a and round i of b ran in the same round: the ratio of each pair. */
const pairRatios = (a: ColdSample[], b: ColdSample[], of: (s: ColdSample) => number) => a.map((x, i) => of(x) / of(b[i]!));
/** A function's cold-start CPU against its bare twin's, round by round. */
const coldCpuRatios = (cold: Map<string, ColdSample[]>, name: string) => pairRatios(cold.get(name)!, cold.get(coldTwin(name)!)!, (x) => x.cpu);
interface WarmResult {
  bundle: Bundle;
  runs: WarmSamples[];
  calls: string;
}

const print = (line = '') => process.stdout.write(`${line}\n`);
const started = performance.now();
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(0)} s`;
const environment = benchEnvironment();
const loadAtStart = loadAverage();
print(`# npm run bench${QUICK ? ' --quick' : ''}: ${environment.date}, ${environment.cores} × ${environment.cpu}, ${environment.memoryGiB} GiB, Node ${environment.node}`);
print(`load average (1/5/15 min) at start: ${loadAtStart}`);

const teams = SIZES.map((size, i) => benchTeam(i + 1, size));
/** The issue's large team: 5,000 members and 300 finance lines, which a list must not pay for. */
const crowd = benchTeam(9, 1_000, { slug: 'bench-crowd', otherMembers: 4_999, costLines: 300 });

print(`\n[${elapsed()}] synthesizing the stack and the bare handler (esbuild, infra/functions.ts bundlingOptions)...`);
rmSync(ASSEMBLY, { recursive: true, force: true });
const bundles = synthBundles(ASSEMBLY);

print(`[${elapsed()}] starting DynamoDB Local...`);
const dynamo = await startBenchDynamo(TABLE);

let report = '';
try {
  const { doc } = dynamo;

  // 2. Import (first: parts 1, 3 and 4 read these teams). Smaller teams first: they also warm
  // up the JVM behind DynamoDB Local before the large one is timed.
  const imports: ImportRun[] = [];
  for (const team of teams) {
    print(`[${elapsed()}] importing ${int(team.size)} projects + ${int(team.size)} daemons (team ${team.slug})...`);
    const run = await importTeam(doc, TABLE, team, (line) => print(`    ${line}`));
    imports.push(run);
    print(`    ${int(run.items)} items in ${(run.importMs / 1000).toFixed(1)} s: ${int(run.items / (run.importMs / 1000))} items/s`);
  }

  print(`[${elapsed()}] importing a team of ${int(crowd.otherMembers + 1)} members and ${crowd.costLines} cost lines (team ${crowd.slug})...`);
  await importTeam(doc, TABLE, crowd);

  // 0. The read path at its floor.
  print(`\n[${elapsed()}] the read path: ${FLOOR_SAMPLES} requests per row through the handlers, every call counted...`);
  const floor = await measureFloor({ endpoint: dynamo.endpoint, tableName: TABLE, small: teams[0]!, crowd, samples: FLOOR_SAMPLES });
  for (const row of floor) print(`  ${row.label}: ${row.status}, ${row.calls}, ${row.rcu} RCU (${row.consistent}), p50 ${ms(row.p50Ms)} ms`);

  // 1. Depth and size.
  print(`\n[${elapsed()}] depth and size: ${DEPTH_SAMPLES} requests per cell through the handlers, the baseline interleaved...`);
  const depth = await measureDepth({
    tableName: TABLE, endpoint: dynamo.endpoint, teams, perPage: PER_PAGE, samples: DEPTH_SAMPLES, baselineSamples, log: print,
  });

  // 3 and 4 need the events each function and the bare handler answer.
  const small = teams[0]!;
  // A function's first request (cold) sends its calls one after the other; a warm one, for the
  // token it just saw, sends them together.
  const { functionEvent, bareTwin, bareOneQuery } = await benchEvents(doc, TABLE, small, PER_PAGE);
  const envOf = (bundle: Bundle, name: string) => lambdaEnvironment(name, dynamo.endpoint, TABLE, bundle.environment);
  const projectsBundle = bundles.functions.find((f) => f.name === 'projects')!;
  const dataEnvironment = projectsBundle.environment;

  // 4. Warm overhead: WARM_RUNS fresh processes per function, functions in rotating order.
  print(`\n[${elapsed()}] warm requests: ${WARM_RUNS} runs per function, each ${WARM.samples} requests after ${WARM.warmup}, alternating with the bare twin...`);
  const warmFunctions = bundles.functions.filter((bundle) => bareTwin(bundle.name, true));
  const warmRuns = await rotatingWarmRuns(warmFunctions, WARM_RUNS, (bundle) => warmRequests(bundle, functionEvent(bundle.name), bundles.bare, bareTwin(bundle.name, true), envOf(bundle, bundle.name), WARM));
  const warm: WarmResult[] = warmFunctions.map((bundle) => ({ bundle, runs: warmRuns.get(bundle)!, calls: bareTwin(bundle.name, true)!.query ? 'BatchGetItem + Query (together)' : 'BatchGetItem' }));
  for (const w of warm) {
    print(`  ${w.bundle.name}: ratio of p50s per run ${spread(w.runs.map(warmRatio))}; CPU ${spread(w.runs.map(cpuRatio))}; LOG_LEVEL=SILENT ${spread(w.runs.map(silentRatio))}`);
  }

  // 3. Cold start: every configuration once per round, rounds interleaved; round 0 is discarded.
  print(`\n[${elapsed()}] cold starts: ${COLD_ROUNDS} fresh processes per bundle, interleaved...`);
  type ColdConfig = { label: string; bundle: Bundle; event: unknown; env: Record<string, string>; calls: string };
  const coldConfigs: ColdConfig[] = [
    ...bundles.functions.map((bundle) => ({
      label: bundle.name, bundle, event: functionEvent(bundle.name), env: envOf(bundle, bundle.name),
      calls: bareTwin(bundle.name, false)?.query ? 'BatchGetItem, then Query' : bareTwin(bundle.name, false) ? 'BatchGetItem' : 'none',
    })),
    // The source-map decision, measured in every run: the projects bundle as deployed, but with
    // Node applying its source map (NODE_OPTIONS=--enable-source-maps).
    { label: SOURCE_MAPS_LABEL, bundle: projectsBundle, event: functionEvent('projects'), env: { ...envOf(projectsBundle, 'projects'), NODE_OPTIONS: '--enable-source-maps' }, calls: 'BatchGetItem, then Query' },
    // And the node:http decision (infra/bundling/node-http.ts): the projects bundle built without it.
    { label: HTTP_IMPORT_LABEL, bundle: bundles.projectsHttpImport, event: functionEvent('projects'), env: envOf(bundles.projectsHttpImport, 'projects'), calls: 'BatchGetItem, then Query' },
    { label: 'bare: 1 Query', bundle: bundles.bareQuery, event: bareOneQuery, env: lambdaEnvironment('bare', dynamo.endpoint, TABLE, dataEnvironment), calls: 'Query' },
    { label: TWIN_LIST, bundle: bundles.bare, event: bareTwin('projects', false), env: lambdaEnvironment('bare', dynamo.endpoint, TABLE, dataEnvironment), calls: 'BatchGetItem, then Query' },
    { label: TWIN_FINANCES, bundle: bundles.bare, event: bareTwin('finances', false), env: lambdaEnvironment('bare', dynamo.endpoint, TABLE, dataEnvironment), calls: 'BatchGetItem' },
  ];
  const cold = new Map<string, ColdSample[]>(coldConfigs.map((c) => [c.label, []]));
  let seed = 7;
  const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
  for (let round = 0; round <= COLD_ROUNDS; round++) {
    // A fresh order each round (seeded): no row always follows the same neighbour.
    const order = coldConfigs.map((c) => [random(), c] as const).sort((a, b) => a[0] - b[0]).map(([, c]) => c);
    for (const c of order) {
      const sample = await coldStart(c.bundle, c.event, c.env);
      if (round > 0) cold.get(c.label)!.push(sample);
    }
  }
  for (const c of coldConfigs) {
    const s = cold.get(c.label)!;
    print(`  ${c.label}: ready ${ms(median(s.map((x) => x.ready)))} ms after process start (import ${ms(median(s.map((x) => x.imported - x.booted)))}, first request ${ms(median(s.map((x) => x.ready - x.imported)))}), CPU ${ms(median(s.map((x) => x.cpu)))} ms`);
  }
  for (const fn of bundles.functions) {
    const twin = coldTwin(fn.name);
    if (twin) print(`  ${fn.name} ÷ ${twin}, CPU to first answer per round: ${spread(coldCpuRatios(cold, fn.name))}`);
  }

  // 5. A 1 GB snapshot, last: its millions of items must not weigh on the other parts.
  let gigabyte: GigabyteRun | undefined;
  if (IMPORT_BYTES > 0) {
  print(`\n[${elapsed()}] importing a ${(IMPORT_BYTES / 1e9).toFixed(2)} GB snapshot with npm run import's command...`);
  await ensureTable(doc, GIGABYTE_TABLE);
  gigabyte = await importGigabyte({ endpoint: dynamo.endpoint, tableName: GIGABYTE_TABLE, targetBytes: IMPORT_BYTES, log: print });
  print(`    ${int(gigabyte.items)} items in ${gigabyte.totalS.toFixed(0)} s: ${int(gigabyte.items / gigabyte.totalS)} items/s; peak RSS ${gigabyte.peakRssMB.toFixed(0)} MB`);
  }

  report = renderReport({ imports, depth, floor, warm, cold, coldConfigs, gigabyte });
} finally {
  await dynamo.stop();
  rmSync(ASSEMBLY, { recursive: true, force: true });
}

print(`\n${report}`);
if (!QUICK || args.out) {
  mkdirSync(join(OUT, '..'), { recursive: true });
  writeFileSync(OUT, report);
  print(`[${elapsed()}] wrote ${OUT}`);
}

interface ReportInput {
  imports: ImportRun[];
  depth: DepthCell[];
  floor: FloorRow[];
  warm: WarmResult[];
  cold: Map<string, ColdSample[]>;
  coldConfigs: { label: string; bundle: Bundle; calls: string }[];
  gigabyte?: GigabyteRun;
}

function renderReport({ imports, depth, floor, warm, cold, coldConfigs, gigabyte }: ReportInput): string {
  const out: string[] = [];
  // [target, measured, verdict]
  const targets: [string, string, string][] = [];
  const yes = (ok: boolean) => (ok ? 'yes' : '**no**');
  const ratioMet = (values: number[]) => yes(median(values) <= RATIO_TARGET);
  out.push('# Benchmark results', '');
  out.push(`Written by \`npm run bench\` (bench/bench.ts); bench/README.md explains each figure.`, '');
  out.push(markdownTable(['', ''], [
    ['date', environment.date],
    ['machine', `${environment.cores} cores, ${environment.cpu}, ${environment.memoryGiB} GiB memory (shared: other jobs ran on it)`],
    ['load average (1/5/15 min)', `${loadAtStart} at start, ${loadAverage()} at the end`],
    ['Node', environment.node],
    ['Java', environment.java],
    ['DynamoDB', environment.dynamodbLocal],
    ['AWS SDK', environment.sdk],
    ['bundler', `esbuild ${environment.esbuild} through ${environment.cdk} NodejsFunction (infra/functions.ts bundlingOptions)`],
    ['code', environment.commit],
    ['run time', elapsed()],
  ]), '');

  // 0. The read path at its floor, and the issue's table.
  const byLabel = (prefix: string) => floor.find((r) => r.label.startsWith(prefix))!;
  const firstSight = byLabel('list, 20 projects, first sight');
  const warm20 = byLabel('list, 20 projects, warm');
  const warm50 = byLabel('list, 50 projects, warm');
  const crowdList = floor.find((r) => r.label.includes('members'))!;
  const smallFinances = byLabel('finances, small');
  const revalidation = byLabel('list revalidation');
  const warmRatios = (name: string) => warm.find((w) => w.bundle.name === name)?.runs.map(warmRatio) ?? [];
  out.push('## The read path at its floor', '');
  out.push(`Each row is ${FLOOR_SAMPLES} requests through the real handler chain (shared/http/handlers.ts) in one process, with a DynamoDB client built as the functions build theirs; every call is counted at the client's middleware stack (bench/calls.ts: calls in flight together are one round trip) and priced with DynamoDB Local's ConsumedCapacity, which bills as DynamoDB does (0.5 per 4 KB eventually consistent, 1 strongly consistent). A row's counts were the same on each of its requests. *First sight*: a fresh handler per request (a new container); *warm*: one handler, the same token again.`, '');
  out.push(markdownTable(
    ['request', 'status', 'DynamoDB calls', 'sequential round trips', 'read capacity (RCU)', 'consistency', 'p50 ms (DynamoDB Local)'],
    floor.map((r) => [r.label, r.status, r.calls, r.roundTrips, r.rcu, r.consistent, ms(r.p50Ms)]),
    'lrlrrlr',
  ), '');
  out.push('### The issue\'s table, this run', '');
  out.push(`Ratios are medians of per-run ratios against the bare twin (bench/bare-handler.ts: the same plain client built the same way, the same calls with the same consistency, sent together when the function sends them together, bundled by the same functionBasics()), given as min / median / max (n runs); a target of ${RATIO_TARGET.toFixed(2)}× is met when the median is at or under it.`, '');
  out.push(markdownTable(['', 'before this issue (main, measured as the issue states)', 'floor / target', 'this run', 'met'], [
    ['sequential DynamoDB round trips, warm list request', '2', '1 for a token the function recently saw valid; 2 at first sight', `${warm20.roundTrips} warm; ${firstSight.roundTrips} at first sight`, yes(warm20.roundTrips === 1 && firstSight.roundTrips <= 2)],
    ['read capacity, 20-project page', '2.0 RCU', '1.5', `${warm20.rcu} RCU`, yes(warm20.rcu <= 1.5)],
    ['read capacity, 50-project page', '3.0–4.0 RCU', '2.5', `${warm50.rcu} RCU`, yes(warm50.rcu <= 2.5)],
    [`list page of a team with ${int(crowd.otherMembers + 1)} members and ${crowd.costLines} cost lines`, '6.5 RCU', "same as a small team's", `${crowdList.rcu} RCU (small team: ${warm20.rcu})`, yes(crowdList.rcu === warm20.rcu)],
    ['finances, small summary', '1.0 RCU', '1.0', `${smallFinances.rcu} RCU, ${smallFinances.roundTrips} round trip`, yes(smallFinances.rcu <= 1 && smallFinances.roundTrips === 1)],
    ['revalidation with a matching If-None-Match', '2 round trips, the whole page read', '1 round trip, no Query', `${revalidation.roundTrips} round trip, ${revalidation.calls}, ${revalidation.status}`, yes(revalidation.roundTrips === 1 && !revalidation.calls.includes('Query'))],
    ['warm per-request time vs the bare twin: lists', '1.16×', `≤ ${RATIO_TARGET.toFixed(2)}×`, `projects ${spread(warmRatios('projects'))}; daemons ${spread(warmRatios('daemons'))}`, `${ratioMet(warmRatios('projects'))} / ${ratioMet(warmRatios('daemons'))}`],
    ['warm per-request time vs the bare twin: finances', '1.23×', `≤ ${RATIO_TARGET.toFixed(2)}×`, spread(warmRatios('finances')), ratioMet(warmRatios('finances'))],
    ['cold start, CPU to first answer vs the bare twin', '1.07–1.08×', `≤ ${RATIO_TARGET.toFixed(2)}×`, ['projects', 'daemons', 'finances'].map((n) => `${n} ${spread(coldCpuRatios(cold, n))}`).join('; '), ['projects', 'daemons', 'finances'].map((n) => ratioMet(coldCpuRatios(cold, n))).join(' / ')],
  ], 'lllll'), '');
  const perMillion = (rcu: number) => `${int(rcu * 1e6)} RRU, US$${((rcu * 1e6 * PRICE_PER_MILLION_RRU) / 1e6).toFixed(4)}`;
  out.push('### Read cost per million list requests', '');
  out.push(`At ${PRICE_SOURCE}. A read request unit is what ConsumedCapacity counts: one strongly consistent read of up to 4 KB, or two eventually consistent ones.`, '');
  out.push(markdownTable(['request', 'RCU per request', 'per million requests'], [
    ['20-project page (warm or first sight)', warm20.rcu, perMillion(warm20.rcu)],
    ['20-project page before this issue (strongly consistent page, token + head 1.0)', 2, perMillion(2)],
    ['50-project page', warm50.rcu, perMillion(warm50.rcu)],
    ['50-project page before this issue', '3.0–4.0', `${perMillion(3)} to ${perMillion(4)}`],
    ['revalidation (304)', revalidation.rcu, perMillion(revalidation.rcu)],
    ['finances, small summary', smallFinances.rcu, perMillion(smallFinances.rcu)],
  ], 'lrr'), '');
  targets.push(['A warm list request waits on 1 round trip; a first sight on at most 2; finances on 1', `${warm20.roundTrips}; ${firstSight.roundTrips}; ${smallFinances.roundTrips}`, yes(warm20.roundTrips === 1 && firstSight.roundTrips <= 2 && smallFinances.roundTrips === 1)]);
  targets.push(['Read capacity of a 20-project page ≤ 1.5 RCU, a 50-project page ≤ 2.5', `${warm20.rcu}; ${warm50.rcu}`, yes(warm20.rcu <= 1.5 && warm50.rcu <= 2.5)]);

  // 1. Depth and size.
  out.push(`## 1. Cost by page depth and team size (per_page=${PER_PAGE})`, '');
  out.push('Each request goes through the real handler chain (shared/http/handlers.ts) in one process; the baseline is that handler with a reader that Queries the team\'s whole partition (following LastEvaluatedKey) and slices the page. Latency is the handler call, DynamoDB Local on the same machine.', '');
  const ourCells = depth.filter((c) => c.approach === 'this API');
  out.push(markdownTable(
    ['projects in team', 'request', 'approach', 'DynamoDB calls', 'sequential round trips', 'read capacity (RCU)', 'items read', 'p50 ms', 'p99 ms', 'requests'],
    depth.map((c) => [
      int(c.team.size), c.request, c.approach,
      `${c.calls.operations.length}: ${compressOperations(c.calls.operations)}${c.calls.attempts > c.calls.operations.length ? ` (${c.calls.attempts} HTTP attempts)` : ''}`, c.calls.sequentialRoundTrips, capacity(c.readCapacity), int(c.items),
      ms(median(c.latencies)), ms(quantile(c.latencies, 0.99)), c.latencies.length,
    ]),
    'lllrrrrrrr',
  ), '');
  const ratioRows = ourCells.filter((c) => c.request !== 'finances').map((c) => {
    const theirs = depth.find((d) => d.team === c.team && d.request === c.request && d.approach !== 'this API')!;
    return [int(c.team.size), c.request, ratio(theirs.readCapacity / c.readCapacity), ratio(theirs.items / c.items), ratio(median(theirs.latencies) / median(c.latencies)), theirs.calls.sequentialRoundTrips - c.calls.sequentialRoundTrips];
  });
  out.push('Baseline ÷ this API, measured in the same run:', '');
  out.push(markdownTable(['projects in team', 'request', 'read capacity', 'items read', 'p50 latency', 'extra round trips'], ratioRows, 'llrrrr'), '');

  const listTrips = Math.max(...ourCells.filter((c) => c.request !== 'finances').map((c) => c.calls.sequentialRoundTrips));
  const financeTrips = Math.max(...ourCells.filter((c) => c.request === 'finances').map((c) => c.calls.sequentialRoundTrips));
  targets.push(['A list request waits on at most 2 sequential round trips', `${listTrips} (every list cell)`, yes(listTrips <= 2)]);
  targets.push(['A finances request waits on 1', `${financeTrips}`, yes(financeTrips <= 1)]);
  const largest = teams[teams.length - 1]!;
  const firstPage = ourCells.find((c) => c.team === largest && c.request === 'page 1')!;
  const lastPage = ourCells.find((c) => c.team === largest && c.request.startsWith('last'))!;
  const capacityDrift = Math.abs(lastPage.readCapacity - firstPage.readCapacity) / firstPage.readCapacity;
  targets.push([`Read capacity of the last page of ${int(largest.size)} projects within 10% of page 1's`, `${lastPage.readCapacity} vs ${firstPage.readCapacity} RCU (${(capacityDrift * 100).toFixed(0)}%)`, yes(capacityDrift <= 0.1)]);

  // 2. Import.
  out.push('## 2. Import', '');
  out.push('Pass 1 (`validateSnapshotFile`) then pass 2 (`importSnapshot`, default concurrency) with the progress display, into the same DynamoDB Local, from a snapshot file per team; the teams are imported smallest first, so the JVM is warm for the largest. Part 5 below imports a 1 GB snapshot.', '');
  out.push(markdownTable(
    ['team', 'items (projects + daemons)', 'validation s', 'writing items s', 'whole import s', 'items/s (whole import)'],
    imports.map((r) => [`${int(r.team.size)} projects`, int(r.items), (r.validateMs / 1000).toFixed(2), (r.itemsMs / 1000).toFixed(1), (r.importMs / 1000).toFixed(1), int(r.items / (r.importMs / 1000))]),
    'lrrrrr',
  ), '');
  const big = imports[imports.length - 1]!;
  out.push(`The progress display's output for the ${int(big.team.size)}-project team (the non-TTY form, a line per 10%; on a terminal it is a redrawn bar):`, '');
  out.push('```', ...big.progress, '```', '');
  const importRate = big.items / (big.importMs / 1000);
  targets.push([`Import at least 2,000 items/s (${int(big.items)} items)`, `${int(importRate)} items/s`, yes(importRate >= 2_000)]);

  // 3. Cold start.
  const bare = cold.get('bare: 1 Query')!;
  const bareReady = median(bare.map((s) => s.ready));
  out.push('## 3. Cold start', '');
  out.push(`A fresh \`node\` process per start, the function's environment from the synthesized template (NODE_OPTIONS included) and Lambda's variables. **Ready** = the handler has answered its first request (and the event loop has turned once, as Lambda's runtime does before it posts the answer), measured from the process's start; it is import (Lambda's init phase) + first request (what the SDK defers: credentials, endpoint, connection, signing). **CPU** = the process's user + system time at that moment, the judged figure: on a shared machine it moves far less than wall time. Medians of ${COLD_ROUNDS} starts per row: each round starts every row once, in a shuffled order, after a discarded first round. The **bare twin** rows (bench/bare-handler.ts) make a function's own first-request calls with the same plain client; **bare: 1 Query** is the floor of any DynamoDB handler, for information. The *${SOURCE_MAPS_LABEL}* row is the projects bundle run as the stack deployed it before this issue; the *${HTTP_IMPORT_LABEL}* row is the projects bundle built without infra/bundling/node-http.ts, as it was before that change.`, '');
  out.push(markdownTable(
    ['bundle', 'DynamoDB calls', 'index.mjs', 'index.mjs.map', 'zip ≈', 'Node start ms', 'import ms', 'first request ms', 'ready ms (p50)', 'ready p90', 'CPU ms (p50)', 'ready ÷ bare: 1 Query'],
    coldConfigs.map((c) => {
      const s = cold.get(c.label)!;
      const ready = median(s.map((x) => x.ready));
      return [
        c.label, c.calls, kb(c.bundle.bytes), kb(c.bundle.mapBytes), kb(c.bundle.zippedBytes),
        ms(median(s.map((x) => x.booted))), ms(median(s.map((x) => x.imported - x.booted))), ms(median(s.map((x) => x.ready - x.imported))),
        ms(ready), ms(quantile(s.map((x) => x.ready), 0.9)), ms(median(s.map((x) => x.cpu))), ratio3(ready / bareReady),
      ];
    }),
    'llrrrrrrrrrr',
  ), '');
  out.push('Per round, each function against its bare twin (the two started in the same round), min / median / max (n rounds):', '');
  out.push(markdownTable(['function', 'twin', 'CPU to first answer', 'ready (wall)'], bundles.functions.filter((fn) => coldTwin(fn.name)).map((fn) => {
    const twin = coldTwin(fn.name)!;
    return [fn.name, twin, spread(coldCpuRatios(cold, fn.name)), spread(pairRatios(cold.get(fn.name)!, cold.get(twin)!, (x) => x.ready))];
  }), 'llll'), '');
  const withMaps = pairRatios(cold.get(SOURCE_MAPS_LABEL)!, cold.get('projects')!, (x) => x.cpu);
  const withMapsMs = cold.get(SOURCE_MAPS_LABEL)!.map((x, i) => x.cpu - cold.get('projects')![i]!.cpu);
  out.push(`Source maps: the projects bundle with \`--enable-source-maps\` ÷ as deployed, CPU to first answer per round: ${spread(withMaps)}; the difference per round, median ${ms(median(withMapsMs))} ms (min ${ms(Math.min(...withMapsMs))}, max ${ms(Math.max(...withMapsMs))}).`, '');
  const httpImport = pairRatios(cold.get('projects')!, cold.get(HTTP_IMPORT_LABEL)!, (x) => x.cpu);
  const httpImportMs = cold.get(HTTP_IMPORT_LABEL)!.map((x, i) => x.cpu - cold.get('projects')![i]!.cpu);
  out.push(`node:http through require(): the projects bundle as deployed ÷ built with node:http as an ES import (which loads undici), CPU to first answer per round: ${spread(httpImport)}; the CPU saved per round, median ${ms(median(httpImportMs))} ms (min ${ms(Math.min(...httpImportMs))}, max ${ms(Math.max(...httpImportMs))}).`, '');
  for (const fn of bundles.functions) {
    if (!coldTwin(fn.name)) continue;
    const ratios = coldCpuRatios(cold, fn.name);
    targets.push([`Cold start of ${fn.name} ≤ ${RATIO_TARGET.toFixed(2)} × its bare twin (CPU to first answer, median of per-round ratios)`, spread(ratios), ratioMet(ratios)]);
  }

  // 4. Warm overhead.
  out.push('## 4. Warm overhead', '');
  out.push(`${WARM_RUNS} runs per function, the functions in rotating order; each run is a fresh process holding the production bundle, the same bundle imported again with LOG_LEVEL=SILENT, and the bare twin making the same DynamoDB calls (same keys, same Query, same consistency; sent together, as the warm function sends them for a token it has seen). Each iteration times one request of each in rotating order, ${WARM.samples} iterations after ${WARM.warmup} of warm-up. Time per request is the handler call and the one turn of the event loop Lambda's Node.js runtime takes before it posts the answer (bench/functions.ts); the function's log lines go to a pipe, as on Lambda. Ratios are per run (p50 ÷ p50, CPU ÷ CPU), given as min / median / max (n runs); the other figures are medians over the runs.`, '');
  const us = (msValue: number) => (msValue * 1000).toFixed(0);
  out.push(markdownTable(
    ['function', 'DynamoDB calls', 'handler p50 ms', 'bare p50 ms', 'ratio of p50s', 'overhead µs (p50)', 'CPU µs per request: handler / bare', 'ratio of CPU', 'LOG_LEVEL=SILENT: ratio of p50s', 'log lines per request'],
    warm.map(({ bundle, runs, calls }) => {
      const fn = median(runs.map((r) => median(r.fn)));
      const b = median(runs.map((r) => median(r.bare)));
      return [
        bundle.name, calls, ms(fn), ms(b), spread(runs.map(warmRatio)), us(median(runs.map((r) => median(r.fn) - median(r.bare)))),
        `${us(median(runs.map((r) => r.cpu.fn)))} / ${us(median(runs.map((r) => r.cpu.bare)))}`, spread(runs.map(cpuRatio)),
        spread(runs.map(silentRatio)), median(runs.map((r) => r.logLinesPerRequest)).toFixed(2),
      ];
    }),
    'llrrrrrrrr',
  ), '');
  for (const { bundle, runs } of warm) {
    targets.push([`Warm time of ${bundle.name} ≤ ${RATIO_TARGET.toFixed(2)} × its bare twin (median of per-run ratios of p50s)`, spread(runs.map(warmRatio)), ratioMet(runs.map(warmRatio))]);
  }

  // 5. The 1 GB snapshot.
  if (!gigabyte) {
    out.push('## 5. Import of a large snapshot', '', 'Not run in this run (`--import-gb 0`).', '');
  } else {
  out.push(`## 5. Import of a ${(gigabyte.bytes / 1e9).toFixed(2)} GB snapshot`, '');
  out.push(`A snapshot of ${int(gigabyte.bytes)} bytes (${int(gigabyte.items)} projects and daemons over ${gigabyte.teams} teams), written as a stream, imported by the real command (\`node commands/import.ts file\`: pass 1 streams and checks the whole file, pass 2 streams it again and writes) into its own table of the same DynamoDB Local. Peak RSS is the import's node process (getrusage's maxRSS at exit), CPU its user and system time. The ${int(imports[imports.length - 1]!.team.size)}-project figure of part 2 beside it, imported in process.`, '');
  const partTwo = imports[imports.length - 1]!;
  out.push(markdownTable(
    ['snapshot', 'items', 'pass 1 s', 'pass 2 and the rest s', 'whole import s', 'items/s (whole import)', 'items/s (pass 2)', 'peak RSS MB', 'CPU s'],
    [
      [`${(gigabyte.bytes / 1e9).toFixed(2)} GB, ${gigabyte.teams} teams`, int(gigabyte.items), gigabyte.validateS.toFixed(1), gigabyte.importS.toFixed(0), gigabyte.totalS.toFixed(0),
        int(gigabyte.items / gigabyte.totalS), int(gigabyte.items / gigabyte.importS), gigabyte.peakRssMB.toFixed(0), gigabyte.cpuS.toFixed(0)],
      [`${int(partTwo.team.size)} projects (part 2)`, int(partTwo.items), (partTwo.validateMs / 1000).toFixed(1), (partTwo.importMs / 1000).toFixed(0), ((partTwo.validateMs + partTwo.importMs) / 1000).toFixed(0),
        int(partTwo.items / ((partTwo.validateMs + partTwo.importMs) / 1000)), int(partTwo.items / (partTwo.importMs / 1000)), '–', '–'],
    ],
    'lrrrrrrrr',
  ), '');
  out.push('The progress display\'s output (non-TTY form), pass 1 then pass 2:', '');
  out.push('```', ...gigabyte.progress, '```', '');
  targets.push([`Import a ${(gigabyte.bytes / 1e9).toFixed(2)} GB snapshot with the import's node process below 500 MB resident`, `${gigabyte.peakRssMB.toFixed(0)} MB`, yes(gigabyte.peakRssMB < 500)]);
  }

  out.push('## Targets', '');
  out.push(`Ratio targets are met when the median of the per-run ratios is at or under ${RATIO_TARGET.toFixed(2)}; min / median / max (n) are given with each.`, '');
  out.push(markdownTable(['target', 'measured', 'met'], targets, 'lll'), '');
  return out.join('\n');
}

/** Capacity units: whole numbers with separators, halves (eventually consistent reads) as they are. */
function capacity(units: number): string {
  return Number.isInteger(units) ? int(units) : String(units);
}

/** BatchGetItem, Query, Query, Query -> BatchGetItem + 3 × Query */
function compressOperations(operations: string[]): string {
  const groups: [string, number][] = [];
  for (const op of operations) {
    const last = groups[groups.length - 1];
    if (last && last[0] === op) last[1] += 1;
    else groups.push([op, 1]);
  }
  return groups.map(([op, n]) => (n === 1 ? op : `${n} × ${op}`)).join(' + ');
}
