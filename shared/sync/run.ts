import { setTimeout as sleep } from 'node:timers/promises';
import pRetry from 'p-retry';
import { acquireSyncLease, type Lease, LeaseHeld, type LeaseOptions } from '../write/lease.ts';
import { TeamLocks } from '../write/team-locks.ts';
import { onEveryWrite, type TableRef, type Writer } from '../write/writer.ts';
import { Applier, type BatchDone } from './applier.ts';
import type { BatchContext } from './batch.ts';
import { missingSchema, sourceShape } from './checks.ts';
import { fullPass, type FullPassProgress } from './full-pass.ts';
import { type ChangeSource, type ChangeStream, LogPositionLost } from './log/change-source.ts';
import { type LogReader, logReader } from './log/reader.ts';
import type { ChangePart, Mapping, SourceShape } from './mapping.ts';
import type { SyncMetricValues } from './metrics.ts';
import { RefusalReport } from './refusals.ts';
import { connectSource, type SourceConnection } from './source/connection.ts';
import { sourceFault } from './source/faults.ts';
import type { SourceUrl } from './source/url.ts';
import { readLogPosition } from './state.ts';
import { Touched } from './touches.ts';

/**
 * The sync (docs/contract.md, section 9; docs/sync.md): keeps the table in step with the source. It
 * reads the changes from the source's own log (log/), turns them into what they touch (touches.ts),
 * and applies them a batch at a time (applier.ts, batch.ts) through the writers' one path. A full pass
 * (full-pass.ts) reconciles what the log could not give: at the first start, when the log no longer
 * holds the position the sync needs, and, on MySQL, every few minutes for the foreign-key cascades
 * its binary log does not record.
 *
 * The run goes through plain states: connecting (the source, patiently), a first full pass (with the
 * log already open, so nothing committed meanwhile waits), then following the log until stopped. A
 * source that stops answering is said once and waited for with backoff (p-retry); the log is then
 * read again from the last position served, so nothing is lost and nothing needs applying twice.
 */
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
  /** Follow the source by full passes alone (its log cannot be read), every fullPassEveryMs. */
  fullPassesOnly?: boolean;
  /** How long `--once` and a run told to give up wait for a source that does not answer (default 30 s). */
  giveUpAfterMs?: number;
  /** Wall-clock milliseconds: retention is measured with it. */
  clock?: () => number;
  /** The log's reader: the engine's (log/reader.ts), unless a test gives one. */
  log?: LogReader;
}

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
  /** The sync's lease: the run's announced end, and whether to wait for a holder about to end. */
  lease?: Pick<LeaseOptions, 'endsAt' | 'waitForEndWithinMs'>;
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

/** What ends a sync at once, in one line: configuration, not weather (credentials, schema, setup, another sync). */
export class SyncRefused extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SyncRefused';
  }
}

const GIVE_UP_AFTER_MS = 30_000;
const MYSQL_FULL_PASS_EVERY_MS = 5 * 60_000;
const IDLE_METRIC_EVERY_MS = 60_000;
/** How long the run waits on an idle log before it looks at its other duties (a full pass due, a metric). */
const IDLE_WAIT_MS = 1_000;
/** How often a schema that failed a query is looked at again, besides each change of a table's shape. */
const SCHEMA_RECHECK_MS = 60_000;

/** Runs the sync until stopped (or one full pass with `once`). Throws SyncRefused for what needs a person. */
export async function runSync(settings: SyncSettings, run: SyncRun = {}): Promise<SyncOutcome> {
  return new Sync(settings, run).run();
}

class Sync {
  private readonly settings: SyncSettings;
  private readonly run_: SyncRun;
  private source?: SourceConnection;
  private mapping?: Mapping;
  private lease?: Lease;
  private locks?: TeamLocks;
  private readonly refusals: RefusalReport;
  private readonly heldBack = new Map<number, Set<ChangePart>>();
  private readonly notes = new Set<string>();
  private itemsWritten = 0;
  private sourceDown = false;
  private lastMetric = 0;
  private lastFullPass = 0;
  /** The position up to which everything is served: carried on the lease (state.ts). */
  private served?: string;
  /** Since when a query of the mapping has failed for the source's schema (a migration took a column). */
  private schemaBroken?: number;

  constructor(settings: SyncSettings, run: SyncRun) {
    this.settings = settings;
    this.run_ = run;
    this.refusals = new RefusalReport(settings.say);
    for (const doc of new Set([settings.table.doc, settings.table.bulk ?? settings.table.doc])) {
      onEveryWrite(doc, () => {
        this.itemsWritten += 1;
      });
    }
  }

  private get stopped(): boolean {
    return this.run_.signal?.aborted === true || this.run_.until?.() === true;
  }

  private get clock() {
    return this.settings.clock ?? Date.now;
  }

  async run(): Promise<SyncOutcome> {
    try {
      await this.connect();
      this.lease = await acquireSyncLease(this.settings.table.doc, this.settings.table.tableName, {
        ...this.run_.lease,
        carry: () =>
          this.served === undefined ? {} : { log_source: this.settings.source.redacted, log_position: this.served },
      }).catch((error) => {
        throw error instanceof LeaseHeld
          ? new SyncRefused(`${error.message}: two syncs never run at once`, { cause: error })
          : error;
      });
      this.run_.onLease?.(true);
      this.locks = new TeamLocks(this.settings.table, this.lease.owner, 'sync');
      if (this.run_.once) await this.passesAlone(true);
      else if (this.settings.fullPassesOnly) await this.passesAlone(false);
      else await this.follow();
      return { refused: this.refusals.lines() };
    } finally {
      await this.locks?.releaseAll();
      await this.lease?.release().catch(() => {});
      if (this.lease) this.run_.onLease?.(false);
      await this.source?.close();
    }
  }

  // ---- The source -------------------------------------------------------------------------------------

  /** Connects and checks the source (schema first); one that does not answer is waited for with backoff. */
  private async connect(): Promise<void> {
    const giveUp = this.run_.once || this.run_.giveUpOnSilence;
    const limit = this.settings.giveUpAfterMs ?? GIVE_UP_AFTER_MS;
    const started = performance.now();
    const source = await pRetry(() => connectSource(this.settings.source), {
      retries: Number.POSITIVE_INFINITY,
      minTimeout: 500,
      maxTimeout: 5_000,
      signal: this.run_.signal,
      shouldRetry: ({ error }) =>
        sourceFault(error) === 'unreachable' && !(giveUp && performance.now() - started >= limit) && !this.stopped,
      onFailedAttempt: ({ error }) => this.sourceFailed(error),
    }).catch((error) => {
      if (sourceFault(error) === 'unreachable' && giveUp) {
        throw new SyncRefused(
          `the source did not answer for ${Math.round(limit / 1000)} s (${this.settings.source.redacted}: ${error.message}): gave up`,
        );
      }
      throw sourceRefusal(error, this.settings.source);
    });
    try {
      const mapping = this.settings.mapping(await sourceShape(source));
      const missing = await missingSchema(source, mapping);
      if (missing.length > 0)
        throw new SyncRefused(`the source (${this.settings.source.redacted}) lacks ${missing.join('; ')}`);
      if (!this.run_.once && !this.settings.fullPassesOnly) {
        const reader = this.settings.log ?? logReader(this.settings.source, mapping, this.settings.table.tableName);
        const notReady = await reader.notReady(source);
        if (notReady.length > 0) {
          throw new SyncRefused(
            `the source (${this.settings.source.redacted}) is not prepared for the sync (${notReady.join('; ')}): ` +
              'run npm run sync -- setup --source <url>',
          );
        }
      }
      this.source = source;
      this.mapping = mapping;
    } catch (error) {
      await source.close();
      throw error;
    }
    if (this.sourceDown) this.settings.say(`the source answers again (${this.settings.source.redacted}): catching up`);
    this.sourceDown = false;
  }

  /** The source failed to answer: said once until it answers again, and counted in a metric line at most once a minute. */
  private sourceFailed(error: Error): void {
    if (!this.sourceDown)
      this.settings.say(`the source does not answer (${this.settings.source.redacted}: ${error.message}); retrying`);
    this.sourceDown = true;
    if (this.clock() - this.lastMetric >= IDLE_METRIC_EVERY_MS) this.emit({ SyncSourceErrors: 1 });
  }

  private writer(): Writer {
    const { doc, bulk, tableName } = this.settings.table;
    return {
      doc,
      bulk,
      tableName,
      owner: this.lease!.owner,
      locks: this.locks!,
      clock: this.clock,
      log: (line) => this.sayOnce(line),
    };
  }

  private context(): BatchContext {
    return {
      source: this.source!,
      mapping: this.mapping!,
      timezone: this.settings.timezone,
      writer: this.writer(),
      refusals: this.refusals,
      heldBack: this.heldBack,
      schemaProblem: (line) => {
        if (this.schemaBroken === undefined)
          this.settings.say(`${line}: the parts it holds are kept as they are until it does`);
        this.schemaBroken ??= this.clock();
      },
      hooks: { onWait: (line) => this.sayOnce(line) },
    };
  }

  // ---- Full passes alone (--once, or a source whose log cannot be read) ---------------------------------

  private async passesAlone(once: boolean): Promise<void> {
    const every = this.settings.fullPassEveryMs ?? MYSQL_FULL_PASS_EVERY_MS;
    for (let first = true; !this.stopped; first = false) {
      const done = await this.withRecovery(async () => {
        const applier = new Applier(
          this.context(),
          async () => {},
          (batch) => this.batchMetric(batch),
        );
        await this.fullPass(applier);
        await applier.settled();
        return true;
      });
      if (!done) continue;
      if (first) this.run_.onReady?.();
      if (once) return;
      await sleep(every, undefined, { signal: this.run_.signal }).catch(() => {});
    }
  }

  // ---- Following the log ------------------------------------------------------------------------------

  private async follow(): Promise<void> {
    const reader = this.settings.log ?? logReader(this.settings.source, this.mapping!, this.settings.table.tableName);
    const log = await reader.changeSource();
    try {
      this.served = await readLogPosition(this.settings.table, this.settings.source.redacted);
      let needFullPass = !(this.run_.changesFirst && this.served !== undefined);
      let ready = false;
      while (!this.stopped) {
        await this.withRecovery(async () => {
          if (this.served === undefined) this.served = await log.currentPosition();
          const stream = await log.open(this.served).catch(async (error) => {
            if (!(error instanceof LogPositionLost)) throw error;
            this.settings.say(
              `${error.message}: reading the log from its end, after a full pass that reconciles the table`,
            );
            this.served = await log.currentPosition();
            needFullPass = true;
            return log.open(this.served);
          });
          try {
            await this.followStream(log, stream, needFullPass, () => {
              needFullPass = false;
              if (!ready) this.run_.onReady?.();
              ready = true;
            });
          } finally {
            await stream.close();
          }
          return true;
        });
      }
    } finally {
      await log.close();
    }
  }

  /** One stream of the log: taken as it comes, applied a batch at a time, full passes as they fall due. */
  private async followStream(log: ChangeSource, stream: ChangeStream, fullPassFirst: boolean, passed: () => void) {
    const applier = new Applier(
      this.context(),
      async (position) => {
        await stream.acknowledge(position);
        this.served = position;
      },
      (batch) => this.batchMetric(batch),
    );
    const reading = (async () => {
      for await (const transaction of stream) applier.take(transaction);
    })();
    // A failure of the stream ends the wait below at once.
    const failed = reading.then(
      () => {
        throw new Error('the log ended');
      },
      (error: unknown) => {
        throw error;
      },
    );
    failed.catch(() => {});
    const every =
      this.settings.fullPassEveryMs ?? (this.settings.source.engine === 'mysql' ? MYSQL_FULL_PASS_EVERY_MS : 0);
    if (fullPassFirst) {
      await Promise.race([this.fullPass(applier), failed]);
      passed();
    }
    while (!this.stopped) {
      await Promise.race([applier.next(IDLE_WAIT_MS, this.run_.signal), failed]);
      const { everyTeam, reshaped } = applier.takeWide();
      if (
        this.schemaBroken !== undefined &&
        (reshaped.size > 0 || this.clock() - this.schemaBroken >= SCHEMA_RECHECK_MS)
      ) {
        await this.recheckSchema(applier);
      }
      if (everyTeam.size > 0) await Promise.race([this.fullPass(applier, [...everyTeam]), failed]);
      if (applier.hasWork) await applier.applyPending();
      else if (every > 0 && this.clock() - this.lastFullPass >= every)
        await Promise.race([this.fullPass(applier), failed]);
      else await this.idleMetric(log);
    }
    await applier.settled();
  }

  /** A full pass through the applier, so that the log's changes committed meanwhile ride with its batches. */
  private async fullPass(applier: Applier, parts?: ChangePart[]): Promise<void> {
    const refused = await fullPass(
      this.source!,
      this.mapping!,
      this.settings.timezone,
      this.settings.table,
      (t) => applier.applyPending(t),
      {
        parts,
        stopped: () => this.stopped,
        onProgress: this.run_.onProgress,
      },
    );
    this.refusals.report(refused, (r) => r.part === 'token');
    if (!parts) this.lastFullPass = this.clock();
  }

  /**
   * After a query of the mapping failed for the source's schema: once the schema answers it again
   * (a change of a table's shape in the log, or a minute later), every part kept meanwhile is read
   * again, so no change made meanwhile is lost.
   */
  private async recheckSchema(applier: Applier): Promise<void> {
    const missing = await missingSchema(this.source!, this.mapping!);
    if (missing.length > 0) {
      this.schemaBroken = this.clock();
      return;
    }
    this.schemaBroken = undefined;
    this.settings.say(
      `the source answers every query of the mapping again (${this.settings.source.redacted}): catching up`,
    );
    const again = new Touched();
    for (const [teamId, parts] of this.heldBack)
      for (const part of parts) if (part !== 'user' && part !== 'token') again.team(teamId, part);
    await applier.applyPending(again);
  }

  // ---- Faults ----------------------------------------------------------------------------------------

  /**
   * Work that reads the source and writes the table: a source that stops answering is said once and
   * reconnected with backoff; DynamoDB failing is said once and waited out; either way the work is
   * left for the next round (the log is read again from the last position served). False when it did
   * not complete.
   */
  private async withRecovery(work: () => Promise<boolean>): Promise<boolean> {
    try {
      const done = await work();
      this.notes.clear();
      return done;
    } catch (error) {
      if (error instanceof SyncRefused) throw error;
      if (this.stopped) return false;
      const fault = sourceFault(error);
      if (fault !== undefined && fault !== 'unreachable') throw sourceRefusal(error, this.settings.source);
      if (fault === 'unreachable') {
        this.sourceFailed(error as Error);
        await this.source?.close();
        this.source = undefined;
        await sleep(1_000, undefined, { signal: this.run_.signal }).catch(() => {});
        await this.connect();
        return false;
      }
      if (isDynamoDbFailure(error)) {
        this.sayOnce(`DynamoDB failed (${(error as Error).message}); retrying`);
        await sleep(2_000, undefined, { signal: this.run_.signal }).catch(() => {});
        return false;
      }
      throw error;
    }
  }

  private sayOnce(line: string): void {
    if (!this.notes.has(line)) this.settings.say(line);
    this.notes.add(line);
  }

  // ---- Metrics -----------------------------------------------------------------------------------------

  private batchMetric(batch: BatchDone): void {
    const written = this.itemsWritten;
    this.itemsWritten = 0;
    this.emit({
      SyncLag: batch.lagSeconds,
      SyncChangesApplied: batch.changes,
      SyncItemsWritten: written,
      SyncRowsRefused: batch.refused,
    });
    this.run_.onPass?.(batch);
  }

  /** One line a minute while nothing changes: the lag is then nothing, and the log held back is said. */
  private async idleMetric(log: ChangeSource): Promise<void> {
    if (this.clock() - this.lastMetric < IDLE_METRIC_EVERY_MS) return;
    const retained =
      this.served === undefined ? undefined : await log.retainedBytes(this.served).catch(() => undefined);
    this.emit({
      SyncLag: 0,
      SyncChangesApplied: 0,
      SyncItemsWritten: this.itemsWritten,
      SyncRowsRefused: 0,
      SyncLogRetainedBytes: retained,
    });
    this.itemsWritten = 0;
  }

  private emit(values: SyncMetricValues): void {
    this.lastMetric = this.clock();
    this.settings.metric({ ...values, SyncSourceErrors: this.sourceDown ? 1 : 0 });
  }
}

/** A source error that a person must fix, said in one line (the password never shown). */
export function sourceRefusal(error: unknown, source: SourceUrl): SyncRefused {
  if (error instanceof SyncRefused) return error;
  const { message } = error as Error;
  const fault = sourceFault(error);
  const where = source.redacted;
  if (fault === 'credentials') return new SyncRefused(`the source refused the credentials (${where}): ${message}`);
  if (fault === 'database') return new SyncRefused(`the source has no such database (${where}): ${message}`);
  if (fault === 'privileges') return new SyncRefused(`the source's role lacks a privilege (${where}): ${message}`);
  if (fault === 'schema')
    return new SyncRefused(`the source's schema does not match the mapping (${where}): ${message}`);
  return new SyncRefused(`the source failed (${where}): ${message}`);
}

/**
 * DynamoDB throttled, failed or did not answer: weather, said once and waited out. An AWS SDK error
 * carries `$metadata`; the commands' client reports silence as NoResponse.
 */
function isDynamoDbFailure(error: unknown): boolean {
  return (
    error instanceof Error && ('$metadata' in error || error.name === 'NoResponse' || error.name === 'LeftUnprocessed')
  );
}
