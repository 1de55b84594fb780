import type { EngineThroughput, KeepsUpRow } from './capture.ts';
import { STATE_NAMES } from './capture.ts';
import type { LatencyRow, Usage } from './commit-to-answer.ts';
import type { WriteCosts } from './write-size.ts';
import type { FirstLoadRow } from './first-load.ts';
import { int, median, table } from './report.ts';
import type { WriteCount } from '../test/support/writes.ts';
import type { Use } from './sources.ts';

/**
 * The sections of bench/RESULTS.md that the parts of the benchmark on changes write, each on its own
 * (`--capture`, `--keeps-up`, `--changes`, `--size`, `--first-load`), and how a file takes them.
 */
export const PART_HEADINGS = {
  capture: "## The app's writes with the capture beside it",
  'keeps-up': '## Keeps up',
  changes: '## From commit to answer',
  size: '## What a change writes',
  'first-load': '## First load',
} as const;

/**
 * The file with these sections in place of its own (the cold starts' where it was), the others as they
 * were, the parts' last in their order.
 */
export function withSections(text: string, sections: Map<string, string>): string {
  const parts = text.trimEnd().split(/\n(?=## )/);
  const headings = Object.values(PART_HEADINGS) as string[];
  const first = (part: string) => part.slice(0, part.indexOf('\n'));
  const kept = parts.filter((part) => !headings.includes(first(part))).map((part) => sections.get(first(part)) ?? part);
  const before = new Map(parts.map((part) => [first(part), part]));
  const ordered = headings.flatMap((h) => sections.get(h) ?? before.get(h) ?? []);
  return `${[...kept, ...ordered].map((part) => part.trimEnd()).join('\n\n')}\n`;
}

/** Where docs/performance.md says what a part measures and how. */
const howMeasured = (part: keyof typeof PART_HEADINGS) =>
  `How: [docs/performance.md](../docs/performance.md#what-the-benchmark-measures-and-how), ` +
  `"${PART_HEADINGS[part].slice(3)}".`;
const ratio = (value: number) => `${value.toFixed(2)}×`;
const seconds = (values: number[]) => values.map((v) => v.toFixed(2)).join(', ');
const kinds = (count: WriteCount) =>
  [...count.byKind]
    .filter(([kind]) => kind !== 'sync lease')
    .map(([kind, n]) => `${int(n)} ${kind}`)
    .join(', ') || 'none';
const GROUPS: [string, (name: string) => boolean][] = [
  ['database', (name) => name === 'postgres' || name === 'mariadbd'],
  ['sync', (name) => !['postgres', 'mariadbd', 'java', 'bench'].includes(name)],
  ['DynamoDB Local', (name) => name === 'java'],
  ['writers (the bench)', (name) => name === 'bench'],
];
const USAGE_GROUPS = GROUPS.map(([group]) => group).join(' / ');
/** CPU (waited for a CPU) of each group of processes: `0.56 (1.20) / …`. */
const usage = (uses: Map<string, Use>, digits: number) =>
  GROUPS.map(([, pick]) => {
    const picked = [...uses].filter(([name]) => pick(name)).map(([, use]) => use);
    const sum = (of: (use: Use) => number) => picked.reduce((n, use) => n + of(use), 0).toFixed(digits);
    return `${sum((u) => u.cpu)} (${sum((u) => u.waited)})`;
  }).join(' / ');
/** Items written, the locks included and the sync's lease left out. */
const items = (count: WriteCount) => count.data + count.of('lock');

export function captureSection(engines: EngineThroughput[]): string {
  const states = Object.keys(STATE_NAMES) as (keyof typeof STATE_NAMES)[];
  const others = states.filter((s) => s !== 'none');
  /** Per row: the figure "not installed", then each state's figure and its ratio to it, round by round. */
  const byState = (
    of: (row: EngineThroughput['rows'][number]) => Record<string, number[]>,
    figure: (v: number) => string,
    goal: boolean,
  ) =>
    table(
      ['database', 'statement', 'writers', STATE_NAMES.none, ...others.map((s) => STATE_NAMES[s])],
      engines.flatMap((e) =>
        e.rows.map((row) => {
          const base = of(row).none!;
          return [
            e.engine,
            row.workload,
            row.writers,
            figure(median(base)),
            ...others.map((state) => {
              const ratios = of(row)[state]!.map((v, i) => v / base[i]!);
              const missed = goal && (state === 'running' || state === 'stopped') && median(ratios) < 0.95;
              const spread = `(${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
              const r = ratio(median(ratios));
              return `${figure(median(of(row)[state]!))} · ${missed ? `**${r}**` : r} ${spread}`;
            }),
          ];
        }),
      ),
    );
  const { rounds, seconds } = engines[0] ?? { rounds: 0, seconds: 0 };
  return [
    `${howMeasured('capture')} ${rounds} rounds, every statement running ${seconds} s in each state; a figure ` +
      "is the median of the rounds, a ratio the median of each round's ratio to 'not installed' (min–max). " +
      'The goal: at least 0.95 with the capture installed, running or stopped.',
    '',
    byState((row) => row.rounds, int, true),
    "The database server's CPU per statement (ms), and its ratio to 'not installed' in the same round.",
    '',
    byState(
      (row) => row.cpu,
      (v) => v.toFixed(v < 10 ? 3 : 1),
      false,
    ),
    "The app's errors, and what each group of processes used while the statements ran, in seconds a second " +
      'of wall time (2 cores): CPU (waited for a CPU).',
    '',
    table(
      ['database', 'state', "app's errors", 'deadlocks', `CPU (waited) s/s: ${USAGE_GROUPS}`],
      engines.flatMap((e) =>
        states.map((state) => {
          const listed = (deadlocks: boolean) =>
            [...e.errors[state]]
              .filter(([k]) => k.endsWith('deadlock') === deadlocks)
              .map(([k, n]) => `${n} × ${k}`)
              .join('; ') || 'none';
          return [e.engine, STATE_NAMES[state], listed(false), listed(true), usage(e.use[state], 2)];
        }),
      ),
    ),
  ].join('\n');
}

export function keepsUpSection(rows: KeepsUpRow[]): string {
  return [
    `${howMeasured('keeps-up')} The goal: every last change served within 10 s of the last commit.`,
    '',
    table(
      [
        'database',
        'writers',
        'for',
        'changes committed',
        'a second',
        "app's errors",
        'served after the writers stopped',
        'within 10 s',
        "the sync's batches, largest lag",
        `CPU (waited) s: ${USAGE_GROUPS}`,
      ],
      rows.map((r) => [
        r.engine,
        r.writers,
        `${r.seconds} s`,
        int(r.changes),
        int(r.changes / r.seconds),
        r.errors || 'none',
        `${r.servedAfter.toFixed(1)} s`,
        r.servedAfter <= 10 ? 'yes' : '**no**',
        `${int(r.batches)}, ${r.lagSeconds.toFixed(1)} s`,
        usage(r.use, 1),
      ]),
    ),
    '',
    // What the sync alone costs a change: the rate one core of its own follows, DynamoDB being AWS's in
    // production, against the rate the writers committed (on this machine all four groups share 2 cores).
    ...rows.map((r) => {
      const cpu = (group: string) => [...r.use].filter(([name]) => GROUPS.find(([g]) => g === group)![1](name));
      const ms = (group: string) => (cpu(group).reduce((n, [, use]) => n + use.cpu, 0) * 1_000) / r.changes;
      return (
        `- ${r.engine}: the sync used ${ms('sync').toFixed(3)} ms of CPU a change (DynamoDB Local ` +
        `${ms('DynamoDB Local').toFixed(3)} ms): one core of its own follows about ${int(1_000 / ms('sync'))} ` +
        `changes a second, against the ${int(r.changes / r.seconds)} the writers committed.`
      );
    }),
  ].join('\n');
}

export function latencySection(
  { rows, usage: uses }: { rows: LatencyRow[]; usage: Usage[] },
  atSize: { rows: LatencyRow[]; firstLoads: string[] },
): string {
  const summary = (goal: (r: LatencyRow) => boolean) => (r: LatencyRow) => [
    r.engine,
    r.change,
    r.seconds.length,
    median(r.seconds).toFixed(2),
    Math.max(...r.seconds).toFixed(2),
    goal(r) ? 'yes' : '**no**',
    seconds(r.seconds),
  ];
  return [
    `${howMeasured('changes')} The goal: a median within 0.5 s and the worst within 2 s.`,
    '',
    table(
      ['database', 'change', 'n', 'median s', 'worst s', 'median ≤ 0.5 s, worst ≤ 2 s', 'each, s'],
      rows.map(summary((r) => median(r.seconds) <= 0.5 && Math.max(...r.seconds) <= 2)),
    ),
    ...uses.map(
      (u) =>
        `- While ${u.engine}'s commits were timed (${u.seconds.toFixed(0)} s), CPU (waited for a CPU), s: ` +
        `${USAGE_GROUPS}: ${usage(u.use, 1)}.`,
    ),
    '',
    `At size, through the limiter, a team loaded first (${atSize.firstLoads.join(', ')}): each change served ` +
      'by the sync and by `npm run import` (from its start to the answer). The target: within 10 s.',
    '',
    table(
      ['by', 'change', 'n', 'median s', 'worst s', 'within 10 s', 'each, s'],
      atSize.rows.map(summary((r) => Math.max(...r.seconds) <= 10)),
    ),
  ].join('\n');
}

/** On-demand write request units, US$ a million (us-east-1, standard table class). */
const WRU_PRICE = 0.625;
const CHANGES_A_MONTH = 10_000 * 30;

export function writesSection({ rows, overlays }: WriteCosts): string {
  const month = (units: number, changes: number) =>
    `$${((units / changes) * CHANGES_A_MONTH * WRU_PRICE * 1e-6).toFixed(2)}`;
  return [
    `${howMeasured('size')} The contract's bounds are on the items; a month is 300,000 such changes at ` +
      'on-demand prices.',
    '',
    table(
      [
        'projects',
        'change',
        'items: sync / whole-list rewrite',
        'the sync wrote',
        'at most (contract)',
        'write units: sync / rewrite',
        'a month at 10,000 a day: sync / rewrite',
      ],
      rows.map((r) => [
        int(r.size),
        r.change,
        `${int(items(r.ours))} / ${int(items(r.baseline))}`,
        kinds(r.ours),
        r.goal === undefined ? '' : `${int(r.goal)}: ${items(r.ours) <= r.goal ? 'yes' : '**no**'}`,
        `${int(r.oursUnits)} / ${int(r.baselineUnits)}`,
        `${month(r.oursUnits, r.changes)} / ${month(r.baselineUnits, r.changes)}`,
      ]),
    ),
    ...overlays.map(
      (o) =>
        `- ${int(o.size)} projects: after these changes the projects' head holds ${o.entries} overlay entries in ` +
        `${o.bytes} bytes; at 2,000 the list is compacted (its ${int(o.size)} items written beside, the old ` +
        `ones swept later): about ${int(o.bytes > 0 ? (2 * o.size * o.bytes) / (2_000 * o.entries) : 0)} items ` +
        'per such change, amortized.',
    ),
  ].join('\n');
}

export function firstLoadSection(rows: FirstLoadRow[]): string {
  const tokens = rows[0]?.tokens ?? 0;
  return [
    `${howMeasured('first-load')} ${int(tokens / 100)} teams of 100 projects, ${int(tokens / 10)} members and ` +
      `${int(tokens)} tokens (10 each). The goal: at most 3 items a token.`,
    '',
    table(
      ['first load', 'seconds', 'items written', 'by kind', 'write units', 'throttled', 'token items per token (≤ 3)'],
      rows.map((r) => {
        const perToken = r.count.of('token', 'user token', 'sanctum') / r.tokens;
        return [
          r.what,
          int(r.seconds),
          int(items(r.count)),
          kinds(r.count),
          int(r.units),
          int(r.throttled),
          `${perToken.toFixed(2)}: ${perToken <= 3 ? 'yes' : '**no**'}`,
        ];
      }),
    ),
  ].join('\n');
}
