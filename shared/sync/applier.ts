import type { LoggedTransaction } from './log/change-source.ts';
import { applyBatch, type BatchContext } from './batch.ts';
import { touch, Touched } from './touches.ts';

/**
 * Between the log and the batches (batch.ts): the changes the log reports are taken as touches as
 * they come, and applied a batch at a time, everything pending at once ("many changes to one team
 * committed close together are applied together"). A position of the log is acknowledged once every
 * change up to it is served, in order, teams written apart included. A team being written apart (many
 * items) takes no other batch meanwhile: its touches wait, and go with the first batch after it; until
 * that batch is applied, no position after theirs is acknowledged, so that a sync killed meanwhile
 * reads them from the log again.
 */
export interface BatchDone {
  /** Changes of the log applied (a full pass's teams are no change). */
  changes: number;
  /** Seconds from the oldest of their commits to now. */
  lagSeconds: number;
  refused: number;
}

export class Applier {
  private pending = new Touched();
  /** The touches of the transaction whose parts are being read, until its commit. */
  private open = new Touched();
  private position: string | undefined;
  /** The newest position of a batch applied, held while a touch before it waits (`deferred`, or back in `pending`). */
  private held: string | undefined;
  /** Whether `pending` holds touches that waited for a team written apart. */
  private pendingWaited = false;
  /** Parts of every team taken for a full pass (takeWide) not passed yet: no position is acknowledged meanwhile. */
  private wide = false;
  private readonly deferred = new Map<number, Touched>();
  private readonly busy = new Set<number>();
  private acknowledged: Promise<void> = Promise.resolve();
  private readonly ctx: BatchContext;
  private readonly acknowledge: (position: string) => Promise<void>;
  private readonly onBatch: (done: BatchDone) => void;
  private readonly apply: typeof applyBatch;
  private waiting?: () => void;
  /** A failure of a team written apart, thrown by the next batch. */
  private failure?: unknown;

  constructor(
    ctx: BatchContext,
    acknowledge: (position: string) => Promise<void>,
    onBatch: (done: BatchDone) => void,
    apply = applyBatch,
  ) {
    this.ctx = ctx;
    this.acknowledge = acknowledge;
    this.onBatch = onBatch;
    this.apply = apply;
  }

  /**
   * A transaction (or part of one) of the log, taken as touches. The parts of a large transaction are
   * held until its commit, then go to a batch whole: a right its last part takes away must be in force
   * no later than one its first part grants, which a batch sees to only for the touches it has.
   */
  take(transaction: LoggedTransaction): void {
    for (const change of transaction.changes) touch(this.open, this.ctx.mapping, change);
    if (!transaction.commit) return;
    const committed = this.open;
    this.open = new Touched();
    this.position = transaction.commit.position;
    if (committed.changes > 0) committed.oldestCommit = transaction.commit.committedAt;
    this.pending.merge(committed);
    this.waiting?.();
  }

  /** Whether there is something to apply, or a position to acknowledge. */
  get hasWork(): boolean {
    return !this.pending.empty || this.position !== undefined;
  }

  /** Resolves when the log brings something (or `signal` aborts, or after `ms`). */
  async next(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.hasWork) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
      signal?.addEventListener('abort', done, { once: true });
      this.waiting = done;
    });
    this.waiting = undefined;
  }

  /**
   * The touches pending now that ask for more than a batch (a TRUNCATE's parts of every team, tables
   * whose shape changed): taken out, for the run to handle (full-pass.ts, a check of the schema).
   */
  takeWide(): { everyTeam: Touched['everyTeam']; reshaped: Touched['reshaped'] } {
    const wide = { everyTeam: new Set(this.pending.everyTeam), reshaped: new Set(this.pending.reshaped) };
    this.wide ||= wide.everyTeam.size > 0;
    this.pending.everyTeam.clear();
    this.pending.reshaped.clear();
    return wide;
  }

  /** The full pass of what takeWide gave is done: positions may be acknowledged again. */
  widePassed(): void {
    this.wide = false;
  }

  /** Applies what is pending, with `extra` (a full pass's teams) if given: one batch. */
  async applyPending(extra?: Touched): Promise<void> {
    if (this.failure) throw this.failure;
    const [batch, position, waitedBefore] = [this.pending, this.position, this.pendingWaited];
    this.pending = new Touched();
    this.position = undefined;
    this.pendingWaited = false;
    if (extra) batch.merge(extra);
    // Touches of a team being written apart wait for it, added to those of the batches before that did.
    let waited: Touched | undefined;
    for (const teamId of this.busy) {
      const waiting = batch.extractTeams(new Set([teamId]));
      if (waiting.teams.size === 0) continue;
      waited = this.deferred.get(teamId) ?? waiting;
      if (waited !== waiting) waited.merge(waiting);
      this.deferred.set(teamId, waited);
    }
    // A batch whose every touch waits is no batch: its changes are counted when they are applied.
    if (waited && batch.empty) {
      waited.changes += batch.changes;
      waited.oldestCommit = Math.min(waited.oldestCommit, batch.oldestCommit);
      batch.changes = 0;
    }
    const changes = batch.changes;
    const oldest = batch.oldestCommit;
    let refused = 0;
    if (!batch.empty) {
      try {
        const outcome = await this.apply(this.ctx, batch);
        // Parts of every team the batch could not narrow to teams: for the run's next full pass of them.
        for (const part of batch.everyTeam) this.pending.everyTeam.add(part);
        refused = outcome.refused;
        this.writtenApart(outcome);
        const { apart, compacted } = outcome;
        this.acknowledged = this.acknowledged.then(() => apart).then(() => compacted);
        this.acknowledged.catch(() => {}); // seen by settled(), or by the next batch
      } catch (error) {
        // Not applied: taken again with the next batch (its position not acknowledged).
        batch.merge(this.pending);
        this.pending = batch;
        this.position ??= position;
        this.pendingWaited ||= waitedBefore;
        throw error;
      }
    }
    this.held = position ?? this.held;
    const acknowledgeable = this.held;
    const passOwed = this.wide || this.pending.everyTeam.size > 0;
    if (acknowledgeable !== undefined && this.deferred.size === 0 && !this.pendingWaited && !passOwed) {
      this.held = undefined;
      this.acknowledged = this.acknowledged.then(() => this.acknowledge(acknowledgeable));
      this.acknowledged.catch(() => {}); // seen by settled(); an abandoned applier's is no crash
    }
    if (changes > 0 || refused > 0) {
      const lagSeconds = Number.isFinite(oldest) ? Math.max(0, (Date.now() - oldest) / 1000) : 0;
      this.onBatch({ changes, lagSeconds: Math.round(lagSeconds * 1000) / 1000, refused });
    }
  }

  /** Waits until every batch applied so far is served and acknowledged (teams written apart included). */
  async settled(): Promise<void> {
    await this.acknowledged;
    if (this.failure) throw this.failure;
  }

  private writtenApart(outcome: Awaited<ReturnType<typeof applyBatch>>): void {
    const teams = outcome.apartTeams;
    if (teams.length === 0) return;
    for (const teamId of teams) this.busy.add(teamId);
    outcome.apart.then(
      () => {
        for (const teamId of teams) {
          this.busy.delete(teamId);
          const waiting = this.deferred.get(teamId);
          this.deferred.delete(teamId);
          if (waiting) {
            this.pending.merge(waiting);
            this.pendingWaited = true;
          }
        }
        this.waiting?.();
      },
      (error: unknown) => {
        this.failure ??= error;
        this.waiting?.();
      },
    );
  }
}
