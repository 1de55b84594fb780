import { defaultMapping, type Mapping, type SourceShape } from '../../shared/sync/mapping.ts';
import type { FullPassProgress } from '../../shared/sync/full-pass.ts';
import type { SyncMetricValues } from '../../shared/sync/metrics.ts';
import { runSync, type SyncOutcome, type SyncRun, type SyncSettings } from '../../shared/sync/run.ts';
import { setUpSource } from '../../shared/sync/setup.ts';
import { parseSourceUrl } from '../../shared/sync/source/url.ts';
import type { TestTable } from './dynamodb.ts';
import type { SourceDatabase } from './source-databases.ts';
import type { tableApi } from './table-api.ts';

/**
 * The one fixture for a synced source: the sync against a test's source database and table, in this
 * process (the sync's own code, as `npm run sync` runs it), as the sync's own role (exactly the
 * privileges contract section 9 allows it); what it says, the metrics it gives, and events to wait
 * on (its first full pass done, a batch applied) instead of sleeps.
 */
export interface RunningSync {
  /** Every line it said, in order. */
  lines: string[];
  /** Every metric it gave, in order. */
  metrics: SyncMetricValues[];
  /** Batches that applied something, counted. */
  readonly batches: number;
  /** Whether the first full pass is done. */
  readonly ready: boolean;
  /** Resolves when the first full pass is done (rejects if the run ends before). */
  readyNow: Promise<void>;
  /** Resolves at the next batch that applies something after this call (or one matching `which`). */
  nextBatch(which?: (metric: SyncMetricValues) => boolean): Promise<void>;
  /** Full passes begun (the first one, periodic ones, and those of a TRUNCATE's parts), counted. */
  readonly fullPasses: number;
  /** The progress the current (or last) full pass last told: its teams and tokens done so far. */
  readonly progress: FullPassProgress | undefined;
  /**
   * Resolves when the next full pass after this call begins: awaited twice in a row, a whole full
   * pass ran in between, begun after the first call (so it saw everything committed before it).
   */
  nextFullPass(): Promise<void>;
  /** Resolves when the run ends (stop() or a failure); rejects with what ended it. */
  done: Promise<SyncOutcome>;
  stop(): Promise<void>;
}

/** The mapping for a source's shape: Laravel's, or the one a test gives. */
const mappingOf = (db: SourceDatabase, mapping?: Mapping) => (shape: SourceShape) =>
  mapping ?? defaultMapping(db.engine, shape);

/** Prepares the source as `npm run sync -- setup` does, as the tables' owner (the app's role). */
export async function setUp(db: SourceDatabase, mapping?: Mapping): Promise<string[]> {
  return setUpSource(parseSourceUrl(db.url), mappingOf(db, mapping), { say: () => {} });
}

export function startSync(
  db: SourceDatabase,
  table: TestTable,
  settings: Partial<Omit<SyncSettings, 'source' | 'table' | 'mapping'>> & {
    once?: boolean;
    mapping?: Mapping;
    /** The sync's lease, shorter than its 60 s renewed every 15 s (a test of a second sync). */
    lease?: SyncRun['lease'];
    /** The log from the position the table's lease carries, with no first full pass (as a deployed sync takes over). */
    changesFirst?: boolean;
    /** Ends the run as its first full pass begins, as a deployed invocation's deadline can. */
    endInFirstPass?: boolean;
    /** Ends the run once this says so, as a deployed invocation's deadline does (checked by the run at its own moments). */
    until?: () => boolean;
  } = {},
): RunningSync {
  const source = parseSourceUrl(db.syncUrl);
  const stop = new AbortController();
  const lines: string[] = [];
  const metrics: SyncMetricValues[] = [];
  let batches = 0;
  let fullPasses = 0;
  let progress: FullPassProgress | undefined;
  const passWaiters = new Set<() => void>();
  let ready = false;
  const waiting = new Set<{ which: (metric: SyncMetricValues) => boolean; resolve: () => void }>();
  let readied: () => void = () => {};
  const readyNow = new Promise<void>((resolve) => (readied = resolve));
  const { once, mapping, lease, changesFirst, endInFirstPass, until, ...rest } = settings;
  const done = runSync(
    {
      source,
      mapping: mappingOf(db, mapping),
      timezone: 'UTC',
      table: { doc: table.doc, bulk: table.bulk, tableName: table.tableName },
      say: (line) => void lines.push(line),
      metric: (values) => {
        metrics.push(values);
        // A batch's values (metrics.ts: only a batch that applied changes or refused rows reports them). Items
        // written alone are no batch: the first turn after the first pass reports the log held back, with the
        // items written since the last batch (the lease carrying the position), and a case waiting for its own
        // change's batch would take it for that batch.
        if (!values.SyncChangesApplied && !values.SyncRowsRefused) return;
        for (const waiter of waiting) {
          if (!waiter.which(values)) continue;
          waiting.delete(waiter);
          waiter.resolve();
        }
      },
      ...rest,
    },
    {
      once,
      lease,
      changesFirst,
      signal: stop.signal,
      until: endInFirstPass ? () => fullPasses > 0 : until,
      onPass: () => {
        batches += 1;
      },
      // A full pass tells its progress as it begins (nothing done yet), and after each of its batches.
      onProgress: (told) => {
        const { teams, tokens } = told;
        progress = { teams: { ...teams }, tokens: { ...tokens } };
        if (teams.done !== 0 || tokens.done !== 0) return;
        fullPasses += 1;
        for (const resolve of passWaiters) resolve();
        passWaiters.clear();
      },
      onReady: () => {
        ready = true;
        readied();
      },
    },
  );
  done.catch(() => {});
  // A run that ends before it is ready rejects readyNow too: no unhandled rejection where no test awaits it.
  const ready_ = Promise.race([readyNow, done.then(() => readyNow)]);
  ready_.catch(() => {});
  return {
    lines,
    metrics,
    get batches() {
      return batches;
    },
    get ready() {
      return ready;
    },
    readyNow: ready_,
    nextBatch: (which = () => true) => new Promise<void>((resolve) => waiting.add({ which, resolve })),
    get fullPasses() {
      return fullPasses;
    },
    get progress() {
      return progress;
    },
    nextFullPass: () => new Promise<void>((resolve) => passWaiters.add(resolve)),
    done,
    stop: async () => {
      stop.abort();
      await done.catch(() => {});
    },
  };
}

/**
 * Polls `check` until it returns true, and says how long that took (ms): a change is "served" the
 * first time the API answers with it. Fails after `limitMs` (the contract's 10 s, with margin),
 * adding what `explain` says then (the last answer seen, what the sync said).
 *
 * The pause between checks grows from 50 ms to at most 200 ms: each check is a request through the
 * handlers to DynamoDB Local, and a case waiting seconds at 50 ms spent the suite's CPU on them. A time
 * said is then late by at most 200 ms, against the contract's 10 s: a case's bound only gets stricter.
 */
export async function servedWithin(
  check: () => Promise<boolean>,
  limitMs = 10_000,
  explain?: () => string,
): Promise<number> {
  const started = performance.now();
  let pauseMs = 50;
  for (;;) {
    if (await check()) return performance.now() - started;
    if (performance.now() - started > limitMs)
      throw new Error(`not served within ${limitMs / 1000} s${explain ? `; ${explain()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
    pauseMs = Math.min(200, Math.round(pauseMs * 1.25));
  }
}

/**
 * Resolves once the sync has applied everything committed before it: a cost line of its own, of a
 * team whose finances no case reads, committed after them, is served only once the batches before
 * it are over (batches run one after another). `team` is that team's id and path segment.
 */
export function settledBy(
  db: SourceDatabase,
  api: ReturnType<typeof tableApi>,
  team: { id: number; segment: string; token: string },
): () => Promise<void> {
  const now = db.engine === 'postgres' ? 'now()' : 'NOW()';
  let markers = 0;
  return async () => {
    const amount = ++markers;
    await db.query(
      'INSERT INTO costs (team_id, label, amount, currency, created_at, updated_at) ' +
        `VALUES (${team.id}, 'marker', ${amount}, 'EUR', ${now}, ${now})`,
    );
    await servedWithin(
      async () =>
        (await api.get(`/api/${team.segment}/finances`, { token: team.token })).body?.totals?.EUR ===
        (amount * (amount + 1)) / 2,
    );
  };
}
