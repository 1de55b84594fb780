import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PROJECT_ROOT } from '../infra/functions.ts';
import { startBenchDynamo } from './dynamo.ts';
import { benchTeam } from './data.ts';
import { benchEvents } from './events.ts';
import { cpuRatio, lambdaEnvironment, rotatingWarmRuns, silentRatio, synthBundles, warmRatio, warmRequests } from './functions.ts';
import { importTeam } from './import.ts';
import { loadAverage } from './environment.ts';
import { median, spread } from './stats.ts';

/**
 * Part 4 of the benchmark alone (`npm run bench:warm -- [--runs 15] [--functions projects,finances]`):
 * the same warm runs as bench.ts part 4 (functions.ts warmRequests, the same bundles, events and
 * bare twin, the same team size and page), printed, without the other parts; RESULTS.md is not
 * written. For working on the warm overhead; the figures in RESULTS.md come from a full run.
 */
const { values: args } = parseArgs({ options: {
  runs: { type: 'string', default: '15' }, functions: { type: 'string', default: 'finances,daemons,projects' },
  warmup: { type: 'string', default: '200' }, samples: { type: 'string', default: '300' },
} });
const RUNS = Number(args.runs);
const WARM = { warmup: Number(args.warmup), samples: Number(args.samples) };
const PER_PAGE = 50;
const TABLE = 'bench';
const print = (line = '') => process.stdout.write(`${line}\n`);
const started = performance.now();
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(0)} s`;

print(`load average at start: ${loadAverage()}`);
const assembly = join(PROJECT_ROOT, 'cdk.out', 'bench-warm');
rmSync(assembly, { recursive: true, force: true });
const bundles = synthBundles(assembly);
const dynamo = await startBenchDynamo(TABLE);
try {
  const { doc } = dynamo;
  const small = benchTeam(1, 1_000);
  await importTeam(doc, TABLE, small);
  const { functionEvent, bareTwin } = await benchEvents(doc, TABLE, small, PER_PAGE);
  const wanted = args.functions!.split(',');
  const measured = bundles.functions.filter((b) => wanted.includes(b.name));
  print(`[${elapsed()}] ${RUNS} runs of ${measured.map((b) => b.name).join(', ')}, ${WARM.samples} requests after ${WARM.warmup}`);
  const warm = await rotatingWarmRuns(
    measured, RUNS,
    (bundle) => warmRequests(bundle, functionEvent(bundle.name), bundles.bare, bareTwin(bundle.name, true), lambdaEnvironment(bundle.name, dynamo.endpoint, TABLE, bundle.environment), WARM),
    (bundle, r, run) => print(`  run ${run + 1} ${bundle.name}: ${warmRatio(r).toFixed(3)}× p50, CPU ${(r.cpu.fn * 1000).toFixed(0)} / ${(r.cpu.bare * 1000).toFixed(0)} µs, silent ${silentRatio(r).toFixed(3)}×`),
  );
  print(`[${elapsed()}] load average at end: ${loadAverage()}`);
  for (const [bundle, runs] of warm) {
    print(`${bundle.name}: ratio of p50s ${spread(runs.map(warmRatio))}; CPU ${spread(runs.map(cpuRatio))} (medians ${(median(runs.map((r) => r.cpu.fn)) * 1000).toFixed(0)} / ${(median(runs.map((r) => r.cpu.bare)) * 1000).toFixed(0)} µs); LOG_LEVEL=SILENT ${spread(runs.map(silentRatio))}; p50 ${median(runs.map((r) => median(r.fn))).toFixed(3)} / ${median(runs.map((r) => median(r.bare))).toFixed(3)} ms`);
  }
} finally {
  await dynamo.stop();
}
