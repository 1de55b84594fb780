import { setTimeout as sleep } from 'node:timers/promises';
import pRetry from 'p-retry';
import { acquireSyncLease, type Lease, LeaseHeld } from '../write/lease.ts';
import { TeamLocks } from '../write/team-locks.ts';
import { onEveryWrite, type Writer } from '../write/writer.ts';
import { Applier, type BatchDone } from './applier.ts';
import type { BatchContext } from './batch.ts';
import { missingSchema, sourceShape } from './checks.ts';
import { fullPass } from './full-pass.ts';
import { type ChangeSource, type ChangeStream, LogPositionLost } from './log/change-source.ts';
import { syncLogReader } from './log/reader.ts';
import type { ChangePart, Mapping } from './mapping.ts';
import { SyncMeter } from './metrics.ts';
import { isDynamoDbFailure, sourceRefusal, SyncRefused } from './refused.ts';
import { RefusalReport } from './refusals.ts';
import { SchemaWatch } from './schema-watch.ts';
import { GIVE_UP_AFTER_MS, IDLE_WAIT_MS, MYSQL_FULL_PASS_EVERY_MS } from './settings.ts';
import type { SyncOutcome, SyncRun, SyncSettings } from './settings.ts';
import { connectSource, type SourceConnection } from './source/connection.ts';
import { sourceFault } from './source/faults.ts';
import { readLogPosition } from './state.ts';
import { Touched } from './touches.ts';

/**
 * The sync (docs/contract.md, section 9; docs/sync.md): keeps the table in step with the source. It
 * reads the source's own log (log/), turns its rows into what they touch (touches.ts) and applies them
 * a batch at a time (applier.ts, batch.ts) through the writers' one path. A full pass (full-pass.ts)
 * reconciles what the log cannot give: at the first start, when the log lost the position the sync
 * needs, and, on MySQL, every few minutes for the foreign-key cascades its binlog does not record.
 *
 * Its states: connecting (patiently, with p-retry's backoff), a first full pass (the log already
 * open, so nothing committed meanwhile waits), then following the log until stopped. A source that
 * stops answering is said once and waited for; the log is then read again from the last position
 * served, so nothing is lost and nothing needs applying twice.
 */
export type { SyncOutcome, SyncRun, SyncSettings } from './settings.ts';
export { SyncRefused, sourceRefusal } from './refused.ts';

/** Checks the source as a run would (credentials, schema, a readable log), then lets it go (npm start checks first). */
export async function checkSource(settings: SyncSettings, run: Pick<SyncRun, 'once' | 'signal'> = {}): Promise<void> {
  const sync = new Sync(settings, { ...run, giveUpOnSilence: true });
  await sync.check();
}

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
  private readonly meter: SyncMeter;
  private lastFullPass = 0;
  /** The position up to which everything is served: carried on the lease (state.ts). */
  private served?: string;
  /** The table needs a full pass before the log's position may be carried. */
  private fullPassOwed = false;
  /** Following the source by full passes alone (fullPassesWithoutLog). */
  private withoutLog = false;
  private readonly schema: SchemaWatch;
  private readonly clock: () => number;

  constructor(settings: SyncSettings, run: SyncRun) {
    this.settings = settings;
    this.run_ = run;
    this.clock = settings.clock ?? Date.now;
    this.refusals = new RefusalReport(settings.say);
    this.meter = new SyncMeter(settings.metric, this.clock);
    this.schema = new SchemaWatch(settings.source, settings.say, this.clock, settings.schemaRecheckMs);
  }

  /** Connects and checks, then closes: checkSource. */
  async check(): Promise<void> {
    try {
      await this.connect();
    } finally {
      await this.source?.close();
    }
  }

  private get stopped(): boolean {
    return this.run_.signal?.aborted === true || this.run_.until?.() === true;
  }

  async run(): Promise<SyncOutcome> {
    const { doc, bulk } = this.settings.table;
    for (const client of new Set([doc, bulk ?? doc]))
      onEveryWrite(client, () => {
        this.meter.written += 1;
      });
    try {
      await this.connect();
      // Where the last run left the log, carried on the lease: read before the lease is taken, which
      // writes it anew (with what `carry` gives, so the position stays for the run after this one).
      if (!this.run_.once && !this.withoutLog)
        this.served = await readLogPosition(this.settings.table, this.settings.source.redacted);
      this.lease = await acquireSyncLease(this.settings.table.doc, this.settings.table.tableName, {
        ...this.run_.lease,
        // Not while a full pass is owed: a run that ends midway through one leaves its successor one. Nor
        // while parts are held back, which only this run knows: its successor passes to find them again.
        carry: () =>
          this.served === undefined || this.fullPassOwed || this.heldBack.size > 0
            ? {}
            : { log_source: this.settings.source.redacted, log_position: this.served },
      }).catch((error) => {
        throw error instanceof LeaseHeld
          ? new SyncRefused(`${error.message}: two syncs never run at once`, { cause: error })
          : error;
      });
      this.run_.onLease?.(true);
      this.locks = new TeamLocks(this.settings.table, this.lease.owner, 'sync');
      if (this.run_.once) await this.passesAlone(true);
      else if (this.withoutLog) await this.passesAlone(false);
      else await this.follow();
      return { refused: this.refusals.lines() };
    } finally {
      await this.schema.settled();
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
      // p-retry tells every failure, those it will not retry too: only silence is "does not answer".
      onFailedAttempt: ({ error }) => {
        if (sourceFault(error) === 'unreachable') this.sourceFailed(error);
      },
    }).catch((error) => {
      if (sourceFault(error) === 'unreachable' && giveUp) {
        throw new SyncRefused(
          `the source did not answer for ${Math.round(limit / 1000)} s ` +
            `(${this.settings.source.redacted}: ${error.message}): gave up`,
        );
      }
      throw sourceRefusal(error, this.settings.source);
    });
    try {
      const mapping = this.settings.mapping(await sourceShape(source));
      const missing = await missingSchema(source, mapping);
      // Refused at the start of a run of its own (or --once); reconnecting, or taking over from the run
      // before (deployed), the parts that read it are kept meanwhile, as while running (schema-watch.ts).
      if (missing.length > 0 && (this.run_.once || (!this.lease && !this.run_.changesFirst)))
        throw new SyncRefused(`the source (${this.settings.source.redacted}) lacks ${missing.join('; ')}`);
      if (!this.run_.once) {
        const reader = syncLogReader(this.settings, mapping);
        const notReady = await reader.notReady(source);
        if (notReady.length > 0 && this.settings.fullPassesWithoutLog) {
          const every = Math.round((this.settings.fullPassEveryMs ?? MYSQL_FULL_PASS_EVERY_MS) / 1000);
          this.settings.say(
            `the source's log cannot be read (${notReady.join('; ')}): following it by a full pass every ${every} s; ` +
              `a change is served at the latest ${every} s plus one pass after its commit`,
          );
          this.withoutLog = true;
        } else if (notReady.length > 0) {
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
    if (this.meter.sourceDown)
      this.settings.say(`the source answers again (${this.settings.source.redacted}): catching up`);
    this.meter.sourceDown = false;
  }

  /** The source failed to answer: said once until it answers again, counted in a metric line once a minute at most. */
  private sourceFailed(error: Error): void {
    if (!this.meter.sourceDown)
      this.settings.say(`the source does not answer (${this.settings.source.redacted}: ${error.message}); retrying`);
    this.meter.sourceFailed();
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
      schemaProblem: (failure) => this.schema.failed(this.mapping!, failure),
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
          (batch) => this.batchDone(batch),
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
    const reader = syncLogReader(this.settings, this.mapping!);
    const log = await reader.changeSource();
    try {
      this.fullPassOwed = !(this.run_.changesFirst && this.served !== undefined);
      let ready = false;
      while (!this.stopped) {
        await this.withRecovery(async () => {
          // The log lost what the sync needs, at its opening or midway (a MySQL row it cannot name).
          const lost = async (error: unknown) => {
            if (!(error instanceof LogPositionLost)) throw error;
            this.settings.say(
              `${error.message}: reading the log from its end, after a full pass that reconciles the table`,
            );
            this.served = await log.currentPosition();
            this.fullPassOwed = true;
          };
          if (this.served === undefined) this.served = await log.currentPosition();
          const stream = await log.open(this.served).catch(async (error) => {
            await lost(error);
            return log.open(this.served!);
          });
          try {
            await this.followStream(log, stream, this.fullPassOwed, () => {
              this.fullPassOwed = false;
              if (!ready) this.run_.onReady?.();
              ready = true;
            });
          } catch (error) {
            await lost(error);
            return false;
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
    // A full pass under way ends with the stream: the next stream's starts again.
    const ended = new AbortController();
    const session = ended.signal;
    try {
      const applier = new Applier(
        this.context(),
        async (position) => {
          await stream.acknowledge(position);
          this.served = position;
        },
        (batch) => this.batchDone(batch),
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
        await Promise.race([this.fullPass(applier, undefined, session), failed]);
        // A pass stopped midway (the run's end, a deployed invocation's deadline) is still owed.
        if (!this.stopped && !session.aborted) passed();
      }
      while (!this.stopped) {
        await Promise.race([applier.next(IDLE_WAIT_MS, this.run_.signal), failed]);
        const { everyTeam, reshaped } = applier.takeWide();
        if (reshaped.size > 0 || this.schema.recheckDue) await this.checkSchema(applier);
        if (everyTeam.size > 0) {
          await Promise.race([this.fullPass(applier, [...everyTeam], session), failed]);
          // Its position is acknowledged only once the pass is whole: one stopped midway is read again.
          if (!this.stopped) applier.widePassed();
        }
        const idle = !applier.hasWork;
        if (!idle) await applier.applyPending();
        else if (every > 0 && this.clock() - this.lastFullPass >= every)
          await Promise.race([this.fullPass(applier, undefined, session), failed]);
        await this.meter.tick(idle, () => (this.served === undefined ? undefined : log.retainedBytes(this.served)));
      }
      await applier.settled();
    } finally {
      ended.abort();
    }
  }

  /** A full pass through the applier, so that the log's changes committed meanwhile ride with its batches. */
  private async fullPass(applier: Applier, parts?: ChangePart[], session?: AbortSignal): Promise<void> {
    const refused = await fullPass(
      this.source!,
      this.mapping!,
      this.settings.timezone,
      this.settings.table,
      (touched) => applier.applyPending(touched),
      {
        parts,
        // A pass left behind by its stream's failure stops between batches (followStream).
        stopped: () => this.stopped || session?.aborted === true,
        onProgress: this.run_.onProgress,
      },
    );
    this.refusals.report(refused, (r) => r.part === 'token');
    if (!parts && session?.aborted !== true) this.lastFullPass = this.clock();
  }

  /**
   * After a table's shape changed (or a few seconds after the schema last lacked what the mapping
   * reads): whether the source still has it all (schema-watch.ts); once it has it again, every part
   * kept meanwhile is read again, so no change made meanwhile is lost. Then, whether the log still
   * reports every table the sync reads (a table dropped and made again is no longer in PostgreSQL's
   * publication until setup runs again): said once.
   */
  private async checkSchema(applier: Applier): Promise<void> {
    const schema = await this.schema.check(this.source!, this.mapping!);
    if (schema === 'broken') return;
    if (schema === 'mended') {
      const again = new Touched();
      for (const [teamId, parts] of this.heldBack)
        for (const part of parts) if (part !== 'user' && part !== 'token') again.team(teamId, part);
      await applier.applyPending(again);
    }
    const reader = syncLogReader(this.settings, this.mapping!);
    const notReady = await reader.notReady(this.source!);
    // A table renamed or dropped since the look above is the schema's to say, not the log's.
    if (notReady.length > 0 && (await this.schema.check(this.source!, this.mapping!)) !== 'broken') {
      this.sayOnce(
        `the source's log no longer reports everything the sync reads (${notReady.join('; ')}): ` +
          'run npm run sync -- setup --source <url> again; the parts it holds are kept as they are meanwhile',
      );
    }
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
      // DynamoDB first: its network errors carry the codes a source's would (ECONNREFUSED), and are not the source's.
      if (isDynamoDbFailure(error)) {
        this.sayOnce(`DynamoDB failed (${(error as Error).message}); retrying`);
        await sleep(2_000, undefined, { signal: this.run_.signal }).catch(() => {});
        return false;
      }
      const fault = sourceFault(error);
      if (fault === 'schema' && !this.run_.once) {
        // A migration took away what a query outside a team's parts reads (the teams, the tokens, a
        // touch's team): said once, and the work tried again, from the last position served, until
        // the schema answers it (a team's parts alone are kept apart instead: batch.ts).
        this.schema.failed(this.mapping!, (error as Error).message);
        await sleep(2_000, undefined, { signal: this.run_.signal }).catch(() => {});
        return false;
      }
      if (fault !== undefined && fault !== 'unreachable') throw sourceRefusal(error, this.settings.source);
      if (fault === 'unreachable') {
        this.sourceFailed(error as Error);
        await this.source?.close();
        this.source = undefined;
        await sleep(1_000, undefined, { signal: this.run_.signal }).catch(() => {});
        await this.connect();
        return false;
      }
      throw error;
    }
  }

  private sayOnce(line: string): void {
    if (!this.notes.has(line)) this.settings.say(line);
    this.notes.add(line);
  }

  private batchDone(batch: BatchDone): void {
    this.meter.batch(batch);
    this.run_.onPass?.(batch);
  }
}
