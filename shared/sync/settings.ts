import type { LeaseOptions } from '../write/lease.ts';
import type { TableRef } from '../write/writer.ts';
import type { BatchDone } from './applier.ts';
import type { FullPassProgress } from './full-pass.ts';
import type { LogIntervals } from './log/change-source.ts';
import type { LogReader } from './log/reader.ts';
import type { Mapping, SourceShape } from './mapping.ts';
import type { SyncMetricValues } from './metrics.ts';
import type { SourceUrl } from './source/url.ts';

/** How long a source may not answer before a run that gives up says so and ends (giveUpAfterMs). */
export const GIVE_UP_AFTER_MS = 30_000;
/** The full pass MySQL needs for the foreign-key cascades its binlog does not record (fullPassEveryMs). */
export const MYSQL_FULL_PASS_EVERY_MS = 5 * 60_000;
/** How long the run waits on an idle log before it looks at its other duties (a full pass due, a metric). */
export const IDLE_WAIT_MS = 1_000;

/** What a sync is given (run.ts): the source, how to read it, the table, and where its words go. */
export interface SyncSettings {
  source: SourceUrl;
  /** The mapping, made for the source's shape (the default adapts to teams without a slug). */
  mapping: (shape: SourceShape) => Mapping;
  /** The zone of the source's times without one (Laravel's app.timezone): UTC unless told. */
  timezone: string;
  table: TableRef;
  /** One line for a person (what happened, once). */
  say: (line: string) => void;
  /** The metrics of a batch, or of an idle minute (metrics.ts): a line for CloudWatch, or Powertools' Metrics. */
  metric: (values: SyncMetricValues) => void;
  /** How often a full pass runs besides (0: never); default: MySQL 5 minutes, PostgreSQL never. */
  fullPassEveryMs?: number;
  /**
   * A source whose log cannot be read (not set up, no REPLICATION) is followed by full passes alone,
   * every fullPassEveryMs, instead of refused: what `--full-pass-every` asks.
   */
  fullPassesWithoutLog?: boolean;
  /** How long `--once` and a run told to give up wait for a source that does not answer (default 30 s). */
  giveUpAfterMs?: number;
  /** Wall-clock milliseconds: retention is measured with it. */
  clock?: () => number;
  /** The log's reader: the engine's (log/reader.ts), unless a test gives one. */
  log?: LogReader;
  /** The engine's reader's intervals and silence limit: its own defaults, unless a test gives shorter ones. */
  logIntervals?: LogIntervals;
  /** How soon a schema that lacks what the mapping reads is looked at again (schema-watch.ts: 5 s unless told). */
  schemaRecheckMs?: number;
}

/** How one run goes: once or until stopped, and what it is told of. */
export interface SyncRun {
  /** The first full pass only (`--once`). */
  once?: boolean;
  signal?: AbortSignal;
  /** Checked between batches: true ends the run (a Lambda invocation nearing its end). */
  until?: () => boolean;
  /** Told after every batch that applied something (tests wait on it). */
  onPass?: (done: BatchDone) => void;
  /** Told once the first full pass is done: the table holds what the source holds. */
  onReady?: () => void;
  /** A full pass's progress: teams and tokens done of the total. */
  onProgress?: (progress: FullPassProgress) => void;
  /**
   * The sync's lease: the run's announced end, and whether to wait for a holder about to end; its
   * length and renewal interval (lease.ts's defaults unless a test gives shorter ones).
   */
  lease?: Pick<LeaseOptions, 'endsAt' | 'waitForEndWithinMs' | 'leaseMs' | 'renewEveryMs'>;
  /** Told when the sync's lease is taken (true) and when it is given back (false). */
  onLease?: (held: boolean) => void;
  /** Taking over from a run that kept the table in step: the log from where it left it, no first full pass. */
  changesFirst?: boolean;
  /** A source silent for giveUpAfterMs ends the run with SyncRefused, as with `once` (the next run tries again). */
  giveUpOnSilence?: boolean;
}

/** What a run leaves: the rows refused now (each once), for `--once` to name. */
export interface SyncOutcome {
  refused: string[];
}
