import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Bench } from 'tinybench';
import { startDynamoDbLocal } from '../commands/local/dynamodb-local.ts';
import { coldStart, lambdaEnvironment, synthBundles, warmRun } from './bundles.ts';
import { measureKeepsUp, measureThroughput } from './capture.ts';
import { measureAtSize } from './at-size.ts';
import { measureLatencies } from './commit-to-answer.ts';
import { measureWrites } from './write-size.ts';
import { benchTeam, importSnapshot, teamSizeFor, writeSnapshot, type BenchTeam } from './data.ts';
import { measureFirstLoad } from './first-load.ts';
import {
  COLD_HEADING,
  coldStartSection,
  depthChart,
  loadAverage,
  measuredLine,
  renderResults,
  type DepthCell,
  type Pair,
  type Results,
} from './report.ts';
import { BENCH_OPTIONS } from './options.ts';
import { routedGet } from '../test/support/table-api.ts';
import { apiFunctions, type Answer, type Send } from './requests.ts';
import {
  captureSection,
  firstLoadSection,
  keepsUpSection,
  latencySection,
  PART_HEADINGS,
  withSections,
  writesSection,
} from './sections.ts';
import type { PartContext } from './sources.ts';

/**
 * npm run bench (its options: commands/bench.ts): what a request costs and how long it takes, on this
 * machine against DynamoDB Local, and what a change costs the app, the sync and DynamoDB, written to
 * bench/RESULTS.md and bench/depth.svg (docs/performance.md explains each part). --quick is a smoke run
 * that writes nothing; --cold, or a part's flag (several may be given), runs that part alone and
 * rewrites its section of RESULTS.md.
 */
const PARTS = Object.keys(PART_HEADINGS) as (keyof typeof PART_HEADINGS)[];
// Read and checked by commands/bench.ts (its usage errors said there) before this module is imported.
const args = parseArgs({ options: BENCH_OPTIONS }).values as Record<string, string | boolean | undefined>;
const QUICK = args.quick === true;
const COLD_ONLY = args.cold === true;
const ONLY = PARTS.filter((part) => args[part] === true);
const IMPORT_GB = Number(args['import-gb'] ?? (QUICK ? 0.02 : 1));

const SIZES = QUICK ? [1_000, 5_000] : [1_000, 10_000, 100_000];
const PER_PAGE = 50;
/** Requests timed per depth cell: this API's, and the whole-team baseline's by team size. */
const API_REQUESTS = QUICK ? 30 : 300;
const baselineRequests = (size: number) => (QUICK ? 3 : size <= 1_000 ? 40 : size <= 10_000 ? 10 : 4);
const COLD_ROUNDS = QUICK ? 3 : 60;
const WARM_RUNS = QUICK ? 2 : 8;
const WARM_MS = QUICK ? 500 : 3_000;
const TABLE = 'bench';

const [started, coldLoad] = [performance.now(), loadAverage()];
const print = (line: string) => process.stdout.write(`${line}\n`);
const step = (what: string) => print(`\n[${((performance.now() - started) / 1000).toFixed(0)} s] ${what}`);
const work = mkdtempSync(join(tmpdir(), 'bench-'));
const teams = SIZES.map((size, i) => benchTeam(i + 1, size));
const small = teams[0]!;
const crowd = benchTeam(9, 100, { slug: 'bench-crowd', members: 5_000, costLines: 300 });

step('starting DynamoDB Local...');
const dynamo = await startDynamoDbLocal();
// This run's data lives in DynamoDB Local's database for its region: every client, the import
// and the bundles' processes use it.
process.env.AWS_REGION = dynamo.region;
const stop = async () => {
  await dynamo.stop();
  rmSync(work, { recursive: true, force: true });
};
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void stop().finally(() => process.exit(130)));
// The in-process handlers log nothing; the bundles, in their own processes, log as deployed.
process.env.LOG_LEVEL = 'SILENT';

/** Each part on changes: what it measures, rendered as its section of RESULTS.md. */
const ctx: PartContext = { quick: QUICK, endpoint: dynamo.endpoint, say: step };
const RUN_PART: Record<(typeof PARTS)[number], () => Promise<string>> = {
  capture: async () => captureSection(await measureThroughput(ctx)),
  'keeps-up': async () => keepsUpSection(await measureKeepsUp(ctx)),
  changes: async () => latencySection(await measureLatencies(ctx), await measureAtSize(ctx)),
  size: async () => writesSection(await measureWrites(ctx)),
  'first-load': async () => firstLoadSection(await measureFirstLoad(ctx)),
};
const sections = new Map<string, string>();
const runParts = async (parts: typeof PARTS) => {
  for (const part of parts) {
    step(`${PART_HEADINGS[part].slice(3)}...`);
    const [from, load] = [performance.now(), loadAverage()];
    const body = await RUN_PART[part]();
    const measured = measuredLine(load, (performance.now() - from) / 1000);
    const section = `${PART_HEADINGS[part]}\n\n${measured}\n\n${body}`;
    sections.set(PART_HEADINGS[part], section);
    print(`\n${section}`);
  }
};
const file = new URL('./RESULTS.md', import.meta.url);
if (ONLY.length > 0) {
  try {
    await runParts(ONLY);
  } finally {
    await stop();
  }
  if (!QUICK) {
    writeFileSync(file, withSections(readFileSync(file, 'utf8'), sections));
    print(`wrote ${ONLY.map((part) => `"${PART_HEADINGS[part].slice(3)}"`).join(', ')} in bench/RESULTS.md`);
  }
  process.exit(0);
}
let results: Results | undefined;
let cold: Results['cold'] = [];
try {
  step('synthesizing the stack and the bare twin...');
  const { functions, twin } = synthBundles(join(work, 'cdk.out'));
  // The cold starts read only the smallest team.
  const imported = COLD_ONLY ? [small] : [...teams, crowd];
  const sizes = imported.map((t) => t.size).join(', ');
  const crowdPart = COLD_ONLY ? '' : `, and one of ${crowd.members} members`;
  step(`importing teams of ${sizes} projects and as many daemons${crowdPart}...`);
  await writeSnapshot(join(work, 'teams.json'), imported);
  const setupImport = await importSnapshot(join(work, 'teams.json'), { endpoint: dynamo.endpoint, tableName: TABLE });

  const api = apiFunctions(dynamo.endpoint, TABLE);
  // A warm function's second request for a token: the first taught it the token.
  const again = async (send: Send, target: string, secret: string, ifNoneMatch?: string) => {
    await send(target, secret);
    return send(target, secret, ifNoneMatch);
  };
  const warm = (target: string, secret: string, ifNoneMatch?: string) => again(api.warm, target, secret, ifNoneMatch);
  const path = (team: BenchTeam, route: string) => `/api/${team.slug}/${route}`;
  // Each bundle's request. Its bare twin replays the calls the function sent: one after the
  // other at a cold start, as a function's first request sends them; at once when warm, as the
  // warm function did. The twin runs in its function's environment (NODE_OPTIONS included).
  const measured = [];
  for (const fn of functions) {
    const target = path(small, fn.name === 'finances' ? 'finances' : `${fn.name}?page=2`);
    const { sent, calls } = await warm(target, small.secret);
    const { event } = routedGet(target, { token: small.secret });
    measured.push({
      fn,
      event,
      env: lambdaEnvironment(fn, dynamo.endpoint, TABLE),
      calls: sent,
      together: calls.sequentialRoundTrips === 1,
      cold: [] as Pair[],
      warm: [] as Pair[],
    });
  }

  step(`cold starts: ${COLD_ROUNDS} rounds, a fresh process for each function and each twin...`);
  // Round 0 warms the disk cache and is discarded. A function and its twin start one after the
  // other, so that both meet the same load; which goes first alternates.
  for (let round = 0; round <= COLD_ROUNDS; round++) {
    for (const m of measured) {
      const fn = () => coldStart(m.fn, m.event, m.env);
      const bare = () => coldStart(twin, { calls: m.calls, together: false }, m.env);
      const pair = round % 2 ? { twin: await bare(), fn: await fn() } : { fn: await fn(), twin: await bare() };
      if (round > 0) m.cold.push(pair);
    }
  }
  cold = measured.map((m) => [m.fn.name, m.cold]);

  if (!COLD_ONLY) {
    step('read cost: every call of one request counted at the client...');
    const etag = (await warm(path(small, 'projects?page=3'), small.secret)).etag;
    const readCost: [string, Answer][] = [
      [
        'list, 20 projects, first sight of the token',
        await api.firstSight(path(small, 'projects?page=2'), small.secret),
      ],
      ['list, 20 projects, warm (token recently seen)', await warm(path(small, 'projects?page=2'), small.secret)],
      ['list, 50 projects, warm', await warm(path(small, 'projects?per_page=50&page=2'), small.secret)],
      [
        `list, 20 projects, team of ${crowd.members} members and ${crowd.costLines} cost lines, warm`,
        await warm(path(crowd, 'projects?page=2'), crowd.secret),
      ],
      ['finances, one cost line', await warm(path(small, 'finances'), small.secret)],
      [`finances, ${crowd.costLines} cost lines`, await warm(path(crowd, 'finances'), crowd.secret)],
      ['list revalidation, matching If-None-Match', await api.warm(path(small, 'projects?page=3'), small.secret, etag)],
    ];

    step(`depth and team size (per_page=${PER_PAGE}): this API against the whole-team baseline...`);
    const baseline = apiFunctions(dynamo.endpoint, TABLE, { wholeTeam: true });
    const depth: DepthCell[] = [];
    for (const team of teams) {
      const last = Math.ceil(team.size / PER_PAGE);
      for (const page of [1, Math.ceil(last / 2), last]) {
        const target = path(team, `projects?per_page=${PER_PAGE}&page=${page}`);
        const ours = await warm(target, team.secret);
        const theirs = await again(baseline.warm, target, team.secret);
        // A whole-team read of the largest team can outlast the request's 8 s database deadline: its
        // 503 is reported as such; any 200 must hold the same page as ours.
        if (theirs.status === 200 ? dataOf(ours) !== dataOf(theirs) : theirs.status !== 503)
          throw new Error(`${target}: the baseline answered other data`);
        const cell = {
          size: team.size,
          page,
          ours: { ...ours, p50: await latency(() => api.warm(target, team.secret), API_REQUESTS) },
          theirs: {
            ...theirs,
            p50: await latency(() => baseline.warm(target, team.secret), baselineRequests(team.size), [200, 503]),
          },
        };
        depth.push(cell);
      }
    }

    step(`warm requests: ${WARM_RUNS} runs, each a fresh process timing a function and its twin with tinybench...`);
    for (let run = 0; run < WARM_RUNS; run++) {
      for (const m of measured)
        m.warm.push(
          await warmRun(m.fn, twin, { fn: m.event, twin: { calls: m.calls, together: m.together } }, m.env, {
            ms: WARM_MS,
            twinFirst: run % 2 === 1,
          }),
        );
    }

    let gigabyte: Results['gigabyte'];
    if (IMPORT_GB > 0) {
      step(`importing a ${IMPORT_GB} GB snapshot with the import command...`);
      const bulk = [1, 2, 3, 4].map((n) =>
        benchTeam(100 + n, teamSizeFor((IMPORT_GB * 1e9) / 4), { slug: `gigabyte-${n}` }),
      );
      const bytes = await writeSnapshot(join(work, 'gigabyte.json'), bulk);
      const run = await importSnapshot(join(work, 'gigabyte.json'), {
        endpoint: dynamo.endpoint,
        tableName: 'bench-gigabyte',
      });
      gigabyte = { bytes, teams: bulk.length, items: bulk.reduce((n, t) => n + 2 * t.size, 0), ...run };
    }
    await runParts(PARTS);
    results = {
      setupImport,
      readCost,
      depth,
      gigabyte,
      perPage: PER_PAGE,
      cold,
      warm: measured.map((m) => [m.fn.name, m.warm]),
    };
  }
} finally {
  await stop();
}

if (!results) {
  const section = coldStartSection(cold, measuredLine(coldLoad, (performance.now() - started) / 1000));
  print(`\n${section}`);
  if (!QUICK) writeFileSync(file, withSections(readFileSync(file, 'utf8'), new Map([[COLD_HEADING, section]])));
  process.exit(0);
}
const report = renderResults(results, performance.now() - started);
print(`\n${report}`);
if (!QUICK) {
  writeFileSync(file, withSections(report, sections));
  writeFileSync(new URL('./depth.svg', import.meta.url), depthChart(results.depth, PER_PAGE));
  print('wrote bench/RESULTS.md and bench/depth.svg');
}

/** The p50 of a request timed `requests` times by tinybench, after a quarter as many to warm up. */
async function latency(request: () => Promise<Answer>, requests: number, expected = [200]): Promise<number> {
  const bench = new Bench({
    time: 0,
    iterations: requests,
    warmupTime: 0,
    warmupIterations: Math.ceil(requests / 4),
    throws: true,
  });
  bench.add('request', async () => {
    const { status } = await request();
    if (!expected.includes(status)) throw new Error(`a timed request answered ${status}`);
  });
  const [task] = await bench.run();
  return (task!.result as { latency: { p50: number } }).latency.p50;
}

function dataOf(a: Answer): string {
  return JSON.stringify((JSON.parse(a.body) as { data: unknown }).data);
}
