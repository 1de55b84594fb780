import { defaultMapping, type Mapping } from '../../shared/sync/mapping.ts';
import { setUpSource } from '../../shared/sync/setup.ts';
import { parseSourceUrl } from '../../shared/sync/source/url.ts';
import { connectSource } from '../../shared/sync/source/connection.ts';
import { runSync, type SyncSettings } from '../../shared/sync/sync.ts';
import type { TestTable } from './dynamodb.ts';
import type { SourceDatabase } from './source-databases.ts';

/**
 * The sync against a test's source database and table, in this process (the sync's own code, as
 * `npm run sync` runs it): what it says, the metric lines it writes, and a way to wait for passes.
 */
export interface RunningSync {
  /** Every line it said, in order. */
  lines: string[];
  /** Every metric document it wrote, parsed. */
  metrics: Record<string, unknown>[];
  /** Passes that applied something, counted. */
  readonly passes: number;
  /** Whether the first full pass is done. */
  readonly ready: boolean;
  /** Resolves when the run ends (stop() or a failure); rejects with what ended it. */
  done: Promise<void>;
  stop(): Promise<void>;
}

/** Prepares the source as `npm run sync -- setup` does. */
export async function setUp(db: SourceDatabase, mapping: Mapping = defaultMapping(db.engine)): Promise<string[]> {
  const source = parseSourceUrl(db.url);
  const connection = await connectSource(source);
  try {
    return await setUpSource(connection, mapping, source.redacted);
  } finally {
    await connection.close();
  }
}

export function startSync(
  db: SourceDatabase,
  table: TestTable,
  settings: Partial<Omit<SyncSettings, 'source' | 'table'>> & { once?: boolean } = {},
): RunningSync {
  const source = parseSourceUrl(db.url);
  const stop = new AbortController();
  const lines: string[] = [];
  const metrics: Record<string, unknown>[] = [];
  let passes = 0;
  let ready = false;
  const { once, ...rest } = settings;
  const done = runSync(
    {
      source,
      mapping: defaultMapping(db.engine),
      timezone: 'UTC',
      table: { doc: table.doc, tableName: table.tableName },
      say: (line) => void lines.push(line),
      metric: (line) => void metrics.push(JSON.parse(line)),
      ...rest,
    },
    { once, signal: stop.signal, onPass: () => void (passes += 1), onReady: () => void (ready = true) },
  );
  done.catch(() => {});
  return {
    lines,
    metrics,
    get passes() {
      return passes;
    },
    get ready() {
      return ready;
    },
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
 */
export async function servedWithin(
  check: () => Promise<boolean>,
  limitMs = 10_000,
  explain?: () => string,
): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await check()) return performance.now() - started;
    if (performance.now() - started > limitMs)
      throw new Error(`not served within ${limitMs / 1000} s${explain ? `; ${explain()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
