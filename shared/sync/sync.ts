import { setTimeout as sleep } from 'node:timers/promises';
import { METRICS_NAMESPACE } from '../metrics.ts';
import { SANCTUM_PARTITION, TEAMS_PARTITION, teamHeadKey, tokenKey, userKey, userTokensQuery } from '../table/keys.ts';
import { acquireSyncLease, acquireWriterLock, type Lease, LeaseHeld, type LeaseOptions } from '../write/lease.ts';
import {
  type DesiredState,
  type DesiredUser,
  isEmpty,
  listsWritten,
  type Plan,
  type PlanProblem,
  readPlan,
  type TeamPlan,
  tokenChanges,
  tokenFingerprint,
} from '../write/plan.ts';
import { getItems, queryAll } from '../write/reads.ts';
import { applyPlan } from '../write/steps.ts';
import { onEveryWrite, type TableRef, type Writer } from '../write/writer.ts';
import {
  type ChangeBatch,
  consumeChanges,
  missingSchema,
  NOTIFY_CHANNEL,
  preparedFor,
  readChanges,
} from './capture.ts';
import type { Mapping } from './mapping.ts';
import {
  ALL_SOURCE_PARTS,
  readTeam,
  type Refusal,
  refusalLine,
  type SourcePart,
  type SourceTeam,
} from './read-team.ts';
import { readTokens, type SourceTokens, streamTokens } from './read-tokens.ts';
import { connectSource, listenPostgres, type SourceConnection, sourceFault, type SourceUrl } from './source.ts';

/**
 * The sync (docs/contract.md, section 9; docs/sync.md): keeps the table in step with the source.
 * A first full pass, then every change the source's triggers record (capture.ts), applied through
 * the writers' steps (shared/write/steps.ts), which write only the parts a change touches. Many
 * changes to one team recorded close together are read and applied together. The table's writers'
 * lock is taken for each batch (an import and a sync never interleave), and the sync's own lease for
 * as long as it runs (two syncs never run at once). A full pass every few minutes reconciles what
 * the triggers cannot report (a TRUNCATE or a foreign-key cascade on MySQL, a change table emptied
 * by hand).
 */
export interface SyncSettings {
  source: SourceUrl;
  mapping: Mapping;
  /** The zone of the source's times without one (Laravel's app.timezone): UTC unless told. */
  timezone: string;
  table: TableRef;
  /** One line for a person (what happened, once). */
  say: (line: string) => void;
  /** One embedded metric format document a line (docs/operations.md): CloudWatch reads it from the logs. */
  metric: (line: string) => void;
  /** How often the full pass runs (default 5 minutes). */
  fullPassEveryMs?: number;
  /** How often the change table is looked at when no notification wakes the sync (default 0.5 s). */
  pollMs?: number;
  /** How long `--once` and setup wait for a source that does not answer (default 30 s). */
  giveUpAfterMs?: number;
  /** Wall-clock milliseconds: retention is measured with it. */
  clock?: () => number;
}

/** What ends a sync at once, in one line: configuration, not weather (credentials, schema, setup, another sync). */
export class SyncRefused extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SyncRefused';
  }
}

const FULL_PASS_EVERY_MS = 5 * 60_000;
const POLL_MS = 500;
const GIVE_UP_AFTER_MS = 30_000;
const IDLE_METRIC_EVERY_MS = 60_000;
/**
 * Teams a full pass reads and writes together (in one transaction of the source, one plan, one hold
 * of the writers' lock when anything differs): between two batches, the changes committed meanwhile
 * are applied, so they wait at most for one batch.
 */
const TEAMS_PER_BATCH = 20;
/** A team's write is heavy past this many list items: teams with light writes go first. */
const HEAVY_WRITE = 1_000;
/** Tokens a full pass or a batch reads from the source at once. */
const TOKENS_PER_READ = 500;
// At most 5 s between tries: a source back from an outage is caught up within the contract's 10 s.
const BACKOFF_MS = [500, 1_000, 2_000, 5_000];

/** Besides teams, what a batch of changes names: tokens by Sanctum id, users renamed or gone. */
interface Also {
  tokens: number[];
  users: DesiredUser[];
  removedUsers: number[];
}
const NOTHING_ELSE: Also = { tokens: [], users: [], removedUsers: [] };

/** A plan that writes nothing: what a batch whose every team is left out does. */
const EMPTY_PLAN: Plan = {
  startedAt: 0,
  teams: [],
  together: [],
  removedTeams: [],
  tokens: { created: [], indexed: [], kept: [], removed: [] },
  users: { written: [], teamsAsSet: [], removed: [] },
  problems: [],
};

/** What a pass did, for its metric line. */
interface Pass {
  changes: number;
  /** Seconds from the oldest change's commit (as the source recorded it) to the end of the pass. */
  lagSeconds: number;
  refused: number;
}

export interface SyncRun {
  /** The first full pass only (`--once`). */
  once?: boolean;
  signal?: AbortSignal;
  /** Checked between passes: true ends the run (a Lambda invocation nearing its end). */
  until?: () => boolean;
  /** Told after every pass that applied something (tests wait on it). */
  onPass?: (pass: Pass) => void;
  /** Told once the first full pass is done: the table holds what the source holds. */
  onReady?: () => void;
  /** The sync's lease: the run's announced end, and whether to wait for a holder about to end (lease.ts). */
  lease?: Pick<LeaseOptions, 'endsAt' | 'waitForEndWithinMs'>;
  /** Told when the sync's lease is taken (true) and when it is given back (false). */
  onLease?: (held: boolean) => void;
  /**
   * Taking over from a run that kept the table in step: the changes recorded meanwhile are applied
   * first, and the full pass follows once they are (instead of preceding them).
   */
  changesFirst?: boolean;
  /** A source silent for giveUpAfterMs ends the run with SyncRefused, as with `once` (the next run tries again). */
  giveUpOnSilence?: boolean;
}

/** Runs the sync until stopped (or one full pass with `once`). Throws SyncRefused for what needs a person. */
export async function runSync(settings: SyncSettings, run: SyncRun = {}): Promise<void> {
  const sync = new Sync(settings, run);
  await sync.run();
}

class Sync {
  private readonly s: Required<Omit<SyncSettings, 'table'>> & { table: TableRef };
  private readonly run_: SyncRun;
  private source?: SourceConnection;
  private listener?: { close(): Promise<void> };
  private lease?: Lease;
  private wakeUp?: () => void;
  private itemsWritten = 0;
  /** Refused rows said (each once), with what they keep: forgotten once that part is read without them. */
  private readonly refused = new Map<string, Refusal>();
  /** Other lines said once while their state lasts (an import holding the lock, DynamoDB failing). */
  private readonly notes = new Set<string>();
  private sourceDown = false;
  private lastFullPass = 0;
  /**
   * Teams refused whole (a bad team row, a problem of the plan), with the parts whose changes came
   * meanwhile: their changes are consumed, so the parts are read again with the team's next change.
   */
  private readonly heldBack = new Map<number, ReadonlySet<SourcePart>>();
  /** A full pass that a TRUNCATE started, from within applyChanges. */
  private truncated = false;
  private lastMetric = 0;
  private lastSourceErrorMetric = 0;

  constructor(settings: SyncSettings, run: SyncRun) {
    this.s = {
      fullPassEveryMs: FULL_PASS_EVERY_MS,
      pollMs: POLL_MS,
      giveUpAfterMs: GIVE_UP_AFTER_MS,
      clock: Date.now,
      ...settings,
    };
    this.run_ = run;
    onEveryWrite(settings.table.doc, () => {
      this.itemsWritten += 1;
    });
  }

  private get stopped(): boolean {
    return this.run_.signal?.aborted === true || this.run_.until?.() === true;
  }

  async run(): Promise<void> {
    try {
      await this.connect();
      this.lease = await acquireSyncLease(this.s.table.doc, this.s.table.tableName, this.run_.lease).catch((error) => {
        throw error instanceof LeaseHeld
          ? new SyncRefused(`${error.message}: two syncs never run at once`, { cause: error })
          : error;
      });
      this.run_.onLease?.(true);
      if (!this.run_.changesFirst) {
        // A source down during the first pass is waited for: a run serves nothing before it is done.
        while (this.lastFullPass === 0 && !this.stopped) await this.withSource(() => this.fullPass());
        this.run_.onReady?.();
      }
      if (this.run_.once) return;
      while (!this.stopped) {
        const applied = await this.withSource(() => this.applyChanges());
        if (applied) continue;
        if (this.s.clock() - this.lastFullPass >= this.s.fullPassEveryMs) {
          await this.withSource(() => this.fullPass());
          continue;
        }
        this.idleMetric();
        await this.wait(this.s.pollMs);
      }
    } finally {
      await this.lease?.release().catch(() => {});
      if (this.lease) this.run_.onLease?.(false);
      await this.disconnect();
    }
  }

  // ---- The source: connected, checked, watched, reconnected ---------------------------------------

  /** Connects and checks the source; an unreachable one is waited for (with `once`, for 30 s at most). */
  private async connect(): Promise<void> {
    const source = await connectPatiently(this.s.source, {
      giveUpAfterMs: this.run_.once || this.run_.giveUpOnSilence ? this.s.giveUpAfterMs : Number.POSITIVE_INFINITY,
      signal: this.run_.signal,
      onDown: (error) => this.sourceFailed(error),
    });
    try {
      await this.check(source);
      this.source = source;
      if (source.engine === 'postgres') await this.listen();
    } catch (error) {
      await this.disconnect();
      await source.close();
      throw error;
    }
    if (this.sourceDown) this.s.say(`the source answers again (${this.s.source.redacted}): catching up`);
    this.sourceDown = false;
  }

  /** Schema first, then the setup: what is missing is named before "not prepared". */
  private async check(source: SourceConnection): Promise<void> {
    const missing = await missingSchema(source, this.s.mapping);
    if (missing.length > 0) throw new SyncRefused(`the source (${this.s.source.redacted}) lacks ${missing.join('; ')}`);
    const prepared = await preparedFor(source, this.s.mapping);
    if (prepared === 'not prepared') {
      throw new SyncRefused(
        `the source (${this.s.source.redacted}) is not prepared for the sync: run npm run sync -- setup --source <url>`,
      );
    }
    if (prepared === 'another mapping') {
      throw new SyncRefused(
        `the source (${this.s.source.redacted}) was prepared for another mapping: ` +
          'run npm run sync -- setup again with this one',
      );
    }
  }

  /** PostgreSQL tells the sync of each commit that recorded a change; MySQL is looked at every pollMs. */
  private async listen(): Promise<void> {
    this.listener = await listenPostgres(
      this.s.source,
      NOTIFY_CHANNEL,
      () => this.wakeUp?.(),
      // A lost listener only slows the sync down to polling until the next reconnect.
      () => {},
    );
  }

  private async disconnect(): Promise<void> {
    await this.listener?.close();
    await this.source?.close();
    this.listener = undefined;
    this.source = undefined;
  }

  private refusal(error: unknown): SyncRefused {
    return sourceRefusal(error, this.s.source);
  }

  /**
   * Work that reads the source: a source that stops answering is said once, reconnected with
   * backoff, and the work is left for the next pass (its changes stay recorded until applied).
   */
  private async withSource<T>(work: () => Promise<T>): Promise<T | undefined> {
    try {
      const done = await work();
      this.notes.clear();
      return done;
    } catch (error) {
      if (error instanceof SyncRefused) throw error;
      if (error instanceof LeaseHeld) {
        this.sayOnce(`${error.message}: the sync applies what changed once it has finished`);
        await this.wait(2_000);
        return undefined;
      }
      const fault = sourceFault(error);
      if (fault === undefined && isDynamoDbFailure(error)) {
        this.sayOnce(`DynamoDB failed (${(error as Error).message}); retrying`);
        await this.wait(BACKOFF_MS[2]!);
        return undefined;
      }
      if (fault === undefined) throw error;
      if (fault !== 'unreachable') throw this.refusal(error);
      await this.disconnect();
      this.sourceFailed(error as Error);
      await this.connect();
      return undefined;
    }
  }

  /** Waits `ms`, or less when PostgreSQL notifies a change or the run is stopped. */
  private async wait(ms: number): Promise<void> {
    const controller = new AbortController();
    const stop = () => controller.abort();
    this.wakeUp = stop;
    this.run_.signal?.addEventListener('abort', stop, { once: true });
    await sleep(ms, undefined, { signal: controller.signal }).catch(() => {});
    this.run_.signal?.removeEventListener('abort', stop);
    this.wakeUp = undefined;
  }

  // ---- Passes --------------------------------------------------------------------------------------

  /** The changes recorded since the last pass, applied together; false when there were none. */
  private async applyChanges(): Promise<boolean> {
    const source = this.source!;
    // The changes and the rows they name are read in one snapshot of the source: a transaction that
    // commits meanwhile is in neither, and is applied whole with the next batch.
    const read = await source.readConsistently(async () => {
      const batch = await readChanges(source);
      if (batch.count === 0) return undefined;
      // A TRUNCATE: every team's part, as a full pass reads it (outside this snapshot).
      if (batch.touched.some((change) => change.ref === null)) return { batch, truncated: true };
      const started = this.s.clock();
      const refused = await this.applyBatch(batch);
      const lagSeconds = Math.round((batch.oldestSeconds + (this.s.clock() - started) / 1000) * 1000) / 1000;
      this.passMetric({ changes: batch.count, lagSeconds, refused });
      return { batch, truncated: false };
    });
    if (!read) return false;
    if (read.truncated) {
      // A full pass applies no changes meanwhile: this one is among them.
      this.truncated = true;
      try {
        await this.fullPass();
      } finally {
        this.truncated = false;
      }
    }
    await consumeChanges(source, read.batch);
    return true;
  }

  /**
   * Between a full pass's batches of teams: the changes committed meanwhile are applied at once, so a
   * long pass (a first load, a large database) keeps none of them waiting past the contract's 10 s.
   */
  private async changesMeanwhile(): Promise<void> {
    if (this.truncated) return;
    while (!this.stopped && (await this.applyChanges())) {}
  }

  /** What a batch of changes touches: its teams' parts, its users, its tokens. */
  private async applyBatch(batch: ChangeBatch): Promise<number> {
    const teams = new Map<number, Set<SourcePart>>();
    const users = new Set<number>();
    const tokens = new Set<number>();
    const partsOf = (teamId: number) => teams.get(teamId) ?? teams.set(teamId, new Set()).get(teamId)!;
    for (const { part, ref } of batch.touched) {
      const id = Number(ref);
      if (part === 'user') users.add(id);
      else if (part === 'token') tokens.add(id);
      else partsOf(id).add(part);
    }
    const { desiredUsers, removedUsers } = await this.usersChanged(users, partsOf, tokens);
    return this.applyTogether(teams, { tokens: [...tokens], users: desiredUsers, removedUsers });
  }

  /**
   * Users changed in the source: a user that is gone leaves every team its item lists, and its
   * tokens go; a user renamed is written (only a user the table already holds: users come in as
   * members).
   */
  private async usersChanged(ids: Set<number>, partsOf: (teamId: number) => Set<SourcePart>, tokens: Set<number>) {
    const desiredUsers: DesiredUser[] = [];
    const removedUsers: number[] = [];
    if (ids.size === 0) return { desiredUsers, removedUsers };
    const { doc, tableName } = this.s.table;
    const list = [...ids];
    const rows = await this.source!.query(
      `SELECT q.id, q.name FROM (${this.s.mapping.queries.users}) q WHERE q.id IN (${list.map(() => '?').join(', ')})`,
      list,
    );
    const present = new Map(rows.map((row) => [Number(row.id), row.name === null ? undefined : String(row.name)]));
    const stored = new Map(
      (await getItems(doc, tableName, list.map(userKey), { consistent: true })).map((item) => [
        Number(String(item.pk).slice('USER#'.length)),
        item,
      ]),
    );
    const arrived: number[] = [];
    for (const id of list) {
      const item = stored.get(id);
      if (!item) {
        if (present.has(id)) arrived.push(id);
        continue;
      }
      if (present.has(id)) {
        desiredUsers.push({ id, name: present.get(id) });
        continue;
      }
      removedUsers.push(id);
      for (const teamId of (item.teams as Iterable<number> | undefined) ?? []) partsOf(Number(teamId)).add('members');
      const { pk, range } = userTokensQuery(id);
      const hashes = (await queryAll(doc, tableName, pk, { range, keysOnly: true })).map((key) =>
        String(key.sk).slice('TOKEN#'.length),
      );
      for (const token of await getItems(doc, tableName, hashes.map(tokenKey), { consistent: true })) {
        if (token.sanctum_id !== undefined) tokens.add(Number(token.sanctum_id));
      }
    }
    if (arrived.length > 0) await this.userArrived(arrived, partsOf, tokens);
    return { desiredUsers, removedUsers };
  }

  /**
   * Users the table does not hold who are in the source (new, or deleted and inserted again with the
   * same id): the teams that list them and their tokens are read, as their rows may have waited there.
   */
  private async userArrived(ids: number[], partsOf: (teamId: number) => Set<SourcePart>, tokens: Set<number>) {
    const { queries } = this.s.mapping;
    const marks = ids.map(() => '?').join(', ');
    const teams = await this.source!.query(
      `SELECT m.team_id AS id FROM (${queries.team_user}) m WHERE m.user_id IN (${marks})
       UNION SELECT t.id FROM (${queries.teams}) t WHERE t.user_id IN (${marks})`,
      [...ids, ...ids],
    );
    for (const row of teams) partsOf(Number(row.id)).add('members');
    for (const row of await this.source!.query(
      `SELECT t.id FROM (${queries.tokens}) t WHERE t.user_id IN (${marks})`,
      ids,
    )) {
      tokens.add(Number(row.id));
    }
  }

  /** The table's writers' lock for `work` (an import running: LeaseHeld, and the batch waits for the next pass). */
  private async underLock<T>(work: (w: Writer) => Promise<T>): Promise<T> {
    const { doc, tableName } = this.s.table;
    const lock = await acquireWriterLock(doc, tableName, 'sync');
    try {
      return await work({ doc, tableName, lock, clock: this.s.clock, log: this.s.say });
    } finally {
      await lock.release().catch(() => {});
    }
  }

  /**
   * Teams (each with the parts a change touched), and the tokens and users a batch names, read in the
   * snapshot of the source the caller opened (readConsistently) and written as one plan
   * (docs/contract.md, section 9): every
   * right taken away (a token narrowed or gone, a member leaving any of these teams) before any is
   * granted, and a slug handed from one team to another in the order that frees it first. A team
   * whose rows or plan break a rule is left out of the plan, said once, and kept as it was; the rest
   * go on. The writers' lock is taken only when there is something to write. Returns the rows refused.
   */
  private async applyTogether(teams: Map<number, Set<SourcePart>>, also: Also = NOTHING_ELSE): Promise<number> {
    const source = this.source!;
    const { doc, tableName } = this.s.table;
    const read = new Map<number, { team: SourceTeam; parts: ReadonlySet<SourcePart> }>();
    const held = new Set<number>();
    const readSome = async (wanted: Map<number, ReadonlySet<SourcePart>>) => {
      for (const item of await getItems(doc, tableName, [...wanted.keys()].map(teamHeadKey))) {
        held.add(Number(item.team_id));
      }
      for (const [teamId, asked] of wanted) {
        // A team the table does not hold yet is read, and written, whole; a held one with the parts
        // whose changes it could not take while it was refused.
        const parts = held.has(teamId)
          ? new Set([...asked, ...(this.heldBack.get(teamId) ?? [])])
          : new Set(ALL_SOURCE_PARTS);
        read.set(teamId, { team: await readTeam(source, this.s.mapping, teamId, parts, this.s.timezone), parts });
      }
    };
    await readSome(teams);
    const tokens = await readTokens(source, this.s.mapping, this.s.timezone, { ids: also.tokens });
    const options = { startedAt: this.s.clock(), tokenOfAnotherUser: 'move', slugCycles: 'together' } as const;

    /** The plan for every team that keeps the rules, with the problems that left the others out. */
    const plan = async (t: TableRef, only?: ReadonlySet<number>) => {
      const problems = new Map<number, Refusal[]>();
      for (;;) {
        const planned = await readPlan(t, this.desiredOf(read, held, problems, tokens, also, only), options);
        if (planned.problems.length === 0) return { planned, problems };
        // A slug held by a team not read here: that team may have given it up in the same
        // transaction of the source, so it is read and planned with the rest.
        const holders = new Map<number, ReadonlySet<SourcePart>>();
        for (const problem of planned.problems) {
          if (problem.kind === 'slugTaken' && !read.has(problem.holder)) holders.set(problem.holder, new Set(['team']));
        }
        // Each round reads teams not read before: a chain of handed slugs is followed to its end.
        if (holders.size > 0) {
          await readSome(holders);
          continue;
        }
        const before = problems.size;
        for (const problem of planned.problems) {
          // A problem that names no team read here leaves them all out: nothing is written.
          const named = teamsOf(problem, read);
          for (const teamId of named.length > 0 ? named : read.keys()) {
            problems.set(teamId, [...(problems.get(teamId) ?? []), planRefusal(problem, teamId)]);
          }
        }
        if (problems.size === before) return { planned: EMPTY_PLAN, problems };
      }
    };

    const first = await plan({ doc, tableName });
    const problems = new Map(first.problems);
    for (const only of lightFirst(first.planned, read.keys())) {
      // Planned again under the lock: what an import wrote meanwhile is what the write starts from.
      const locked = await this.underLock(async (w) => {
        const again = await plan(w, only);
        if (!isEmpty(again.planned)) {
          await applyPlan(w, again.planned, async (emit) => {
            for (const [teamId, { team }] of read) if (only.has(teamId)) await team.items(emit);
          });
        }
        return again;
      });
      for (const teamId of only) problems.delete(teamId);
      for (const [teamId, refusals] of locked.problems) if (only.has(teamId)) problems.set(teamId, refusals);
    }
    let refused = 0;
    for (const [teamId, { team, parts }] of read) {
      if (team.state === 'refused' || problems.has(teamId)) this.heldBack.set(teamId, parts);
      else this.heldBack.delete(teamId);
      const all = [...team.refusals, ...(problems.get(teamId) ?? [])];
      this.report(all, (r) => r.teamId === teamId && (parts.has(r.part as SourcePart) || r.part === 'team'));
      refused += all.length;
    }
    const asked = new Set(also.tokens.map(String));
    this.report(tokens.refusals, (r) => r.part === 'token' && asked.has(r.id));
    return refused + tokens.refusals.length;
  }

  /** What the teams read ask of the table: those left out (refused, or a problem of the plan) are not named. */
  private desiredOf(
    read: Map<number, { team: SourceTeam }>,
    held: ReadonlySet<number>,
    leftOut: ReadonlyMap<number, unknown>,
    tokens: SourceTokens,
    also: Also,
    only?: ReadonlySet<number>,
  ): DesiredState {
    const desired: DesiredState = {
      teams: [],
      users: [...also.users],
      tokens: tokens.tokens,
      removedTeams: [],
      removedUsers: also.removedUsers,
      removedTokens: tokens.gone,
    };
    for (const [teamId, { team }] of read) {
      if (leftOut.has(teamId) || team.state === 'refused' || (only && !only.has(teamId))) continue;
      if (team.state === 'absent') {
        desired.removedTeams!.push(teamId);
        continue;
      }
      // A team the table does not hold yet is written whole or not at all.
      const complete = team.desired!.projects && team.desired!.daemons && team.desired!.finance;
      if (!held.has(teamId) && !complete) continue;
      desired.teams.push(team.desired!);
      desired.users.push(...team.users);
    }
    // A user who is a member of several of these teams is named once.
    desired.users = [...new Map(desired.users.map((user) => [user.id, user])).values()];
    return desired;
  }

  /** Tokens by Sanctum id (and users renamed or gone), read from the source and written as it says. */
  private async applyTokens(w: Writer, ids: number[], users: DesiredUser[], removedUsers: number[]): Promise<number> {
    let refused = 0;
    for (let i = 0; i < Math.max(ids.length, 1); i += TOKENS_PER_READ) {
      const chunk = ids.slice(i, i + TOKENS_PER_READ);
      const read = await readTokens(this.source!, this.s.mapping, this.s.timezone, { ids: chunk });
      const asked = new Set(chunk.map(String));
      this.report(read.refusals, (r) => r.part === 'token' && asked.has(r.id));
      refused += read.refusals.length;
      const first = i === 0;
      const plan = await readPlan(
        w,
        {
          teams: [],
          users: first ? users : [],
          tokens: read.tokens,
          removedTokens: read.gone,
          removedUsers: first ? removedUsers : [],
        },
        { startedAt: this.s.clock(), tokenOfAnotherUser: 'move' },
      );
      if (plan.problems.length > 0) {
        this.report(
          plan.problems.map((p) => planRefusal(p, 0)),
          () => false,
        );
        refused += plan.problems.length;
        continue;
      }
      if (!isEmpty(plan)) await applyPlan(w, plan, async () => {});
    }
    return refused;
  }

  /**
   * Every team and token of the source against the table: what the triggers cannot report, found.
   * Teams in chunks, each under one hold of the writers' lock; tokens compared with one Query of
   * the Sanctum ids' partition (each item keeps its token's fingerprint), read where they differ.
   */
  private async fullPass(): Promise<void> {
    const { doc, tableName } = this.s.table;
    const source = this.source!;
    const inSource = (await source.query(`SELECT q.id FROM (${this.s.mapping.queries.teams}) q ORDER BY q.id`)).map(
      (row) => Number(row.id),
    );
    const inTable = new Set(
      (await queryAll(doc, tableName, TEAMS_PARTITION, { keysOnly: true })).map((k) => Number(k.sk)),
    );
    const teamIds = [...new Set([...inSource, ...inTable])].sort((a, b) => a - b);
    let refused = 0;
    let next = 0;
    while (next < teamIds.length) {
      if (this.stopped) return; // left for the next run: what it wrote so far is whole
      const batch = new Map(teamIds.slice(next, next + TEAMS_PER_BATCH).map((id) => [id, new Set(ALL_SOURCE_PARTS)]));
      next += batch.size;
      refused += await source.readConsistently(() => this.applyTogether(batch));
      await this.changesMeanwhile();
    }
    const index = new Map(
      (await queryAll(doc, tableName, SANCTUM_PARTITION)).map((item) => [
        Number(item.sanctum_id),
        String(item.fingerprint),
      ]),
    );
    const differing: number[] = [];
    const seen = new Set<number>();
    const tokenRefusals: Refusal[] = [];
    await streamTokens(
      source,
      this.s.mapping,
      this.s.timezone,
      (token, id) => {
        // A refused token is not seen: it goes (read-tokens.ts).
        if (token === 'refused') return;
        seen.add(id);
        if (index.get(id) !== tokenFingerprint(token)) differing.push(id);
      },
      tokenRefusals,
    );
    this.report(tokenRefusals, (r) => r.part === 'token');
    refused += tokenRefusals.length;
    const gone = [...index.keys()].filter((id) => !seen.has(id));
    if (differing.length + gone.length > 0) {
      refused += await this.underLock((w) => this.applyTokens(w, [...differing, ...gone], [], []));
    }
    this.lastFullPass = this.s.clock();
    this.passMetric({ changes: 0, lagSeconds: 0, refused });
  }

  // ---- What is said ----------------------------------------------------------------------------------

  /**
   * Refused rows, each said once. A row said before is forgotten (it was fixed) once a read that
   * covers its part (`covered`) no longer refuses it: broken again later, it is said again.
   */
  private report(refusals: Refusal[], covered: (earlier: Refusal) => boolean): void {
    const now = new Set(refusals.map(refusalLine));
    for (const [line, earlier] of this.refused) if (!now.has(line) && covered(earlier)) this.refused.delete(line);
    for (const refusal of refusals) {
      const line = refusalLine(refusal);
      if (!this.refused.has(line)) this.s.say(line);
      this.refused.set(line, refusal);
    }
  }

  /** A line said once while its state lasts: the notes are forgotten once a pass goes through. */
  private sayOnce(line: string): void {
    if (!this.notes.has(line)) this.s.say(line);
    this.notes.add(line);
  }

  /**
   * The source failed to answer: said once until it answers again, and counted in a metric line at
   * most once a minute meanwhile (the alarm on a source that keeps failing reads it).
   */
  private sourceFailed(error: Error): void {
    if (!this.sourceDown)
      this.s.say(`the source does not answer (${this.s.source.redacted}: ${error.message}); retrying`);
    this.sourceDown = true;
    if (this.s.clock() - this.lastSourceErrorMetric < IDLE_METRIC_EVERY_MS) return;
    this.lastSourceErrorMetric = this.s.clock();
    this.emit(0, 0, 0, 0);
  }

  /** One EMF line for a pass that changed something. */
  private passMetric(pass: Pass): void {
    const written = this.itemsWritten;
    this.itemsWritten = 0;
    if (pass.changes === 0 && written === 0 && pass.refused === 0) return;
    this.emit(pass.lagSeconds, pass.changes, written, pass.refused);
    this.run_.onPass?.(pass);
  }

  /** One EMF line a minute while nothing changes: the lag is then nothing. */
  private idleMetric(): void {
    if (this.s.clock() - this.lastMetric < IDLE_METRIC_EVERY_MS) return;
    this.emit(0, 0, this.itemsWritten, 0);
    this.itemsWritten = 0;
  }

  private emit(lagSeconds: number, changes: number, written: number, refused: number): void {
    this.lastMetric = this.s.clock();
    this.s.metric(syncMetricLine({ lagSeconds, changes, written, refused, sourceErrors: this.sourceDown ? 1 : 0 }));
  }
}

/**
 * Connects to the source; one that does not answer is tried again with backoff (`onDown` told of
 * each failure) until `giveUpAfterMs`, when SyncRefused says so. Anything else the source answers
 * (wrong credentials, no such database) is SyncRefused at once: configuration, not weather.
 */
export async function connectPatiently(
  source: SourceUrl,
  options: { giveUpAfterMs: number; signal?: AbortSignal; onDown?: (error: Error) => void },
): Promise<SourceConnection> {
  const started = performance.now();
  for (let attempt = 0; ; attempt++) {
    try {
      return await connectSource(source);
    } catch (error) {
      if (sourceFault(error) !== 'unreachable') throw sourceRefusal(error, source);
      options.onDown?.(error as Error);
      if (performance.now() - started >= options.giveUpAfterMs) {
        throw new SyncRefused(
          `the source did not answer for ${Math.round(options.giveUpAfterMs / 1000)} s ` +
            `(${source.redacted}: ${(error as Error).message}): gave up`,
        );
      }
      if (options.signal?.aborted) throw new SyncRefused('stopped while waiting for the source');
      const pause = BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!;
      await sleep(Math.min(pause, Math.max(options.giveUpAfterMs - (performance.now() - started), 0)), undefined, {
        signal: options.signal,
      }).catch(() => {});
    }
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
  if (fault === 'schema') {
    return new SyncRefused(`the source's schema does not match the mapping (${where}): ${message}`);
  }
  return new SyncRefused(`the source failed (${where}): ${message}`);
}

/**
 * DynamoDB throttled, failed or did not answer: weather, said once and waited out (the changes stay
 * recorded until applied). An AWS SDK error carries `$metadata`; the commands' client reports
 * silence as NoResponse.
 */
function isDynamoDbFailure(error: unknown): boolean {
  return (
    error instanceof Error && ('$metadata' in error || error.name === 'NoResponse' || error.name === 'LeftUnprocessed')
  );
}

/** Seconds from the oldest change's recording to `now`. */
/**
 * A batch's teams in the order their writes go: those that write a few items before those that
 * rewrite a long list, so that a small change is not kept waiting behind a large one (a cost line
 * behind 20,000 new projects); unless something ties them (a slug one gives the other, a user
 * leaving one and joining the other, a token or a user that changes), when they stay one plan.
 */
function lightFirst(planned: Plan, teamIds: Iterable<number>): ReadonlySet<number>[] {
  if (isEmpty(planned)) return [];
  const all = new Set(teamIds);
  const itemsOf = (team: TeamPlan) => listsWritten(team).reduce((n, list) => n + (team.desired[list]?.count ?? 0), 0);
  const heavy = planned.teams.filter((team) => itemsOf(team) > HEAVY_WRITE);
  const light = planned.teams.filter((team) => !heavy.includes(team));
  if (heavy.length === 0 || light.length + planned.removedTeams.length === 0) return [all];
  const { tokens, users } = planned;
  const tokensOrUsers =
    tokens.created.length + tokens.removed.length + tokens.indexed.length > 0 ||
    tokens.kept.some(tokenChanges) ||
    users.written.length + users.teamsAsSet.length + users.removed.length > 0;
  const meets = (a: number[], b: number[]) => a.some((id) => b.includes(id));
  const tied = (a: TeamPlan, b: TeamPlan) =>
    a.desired.identity.slug === b.stored?.identity.slug ||
    b.desired.identity.slug === a.stored?.identity.slug ||
    meets(a.joining, b.leaving) ||
    meets(a.leaving, b.joining);
  if (tokensOrUsers || light.some((a) => heavy.some((b) => tied(a, b)))) return [all];
  const heavyIds = new Set(heavy.map((team) => team.desired.identity.id));
  return [new Set([...all].filter((id) => !heavyIds.has(id))), heavyIds];
}

/** The teams of a batch that a problem of its plan leaves out. */
function teamsOf(problem: PlanProblem, read: ReadonlyMap<number, { team: SourceTeam }>): number[] {
  if (problem.kind === 'slugTaken' || problem.kind === 'slugCycle') return [problem.team.identity.id];
  if (problem.kind === 'tooManyTeams') {
    return [...read].flatMap(([id, { team }]) => (team.desired?.memberIds?.includes(problem.userId) ? [id] : []));
  }
  return [];
}

/** A plan's problem as a refused row of the team's own (a slug another team holds, …). */
function planRefusal(problem: PlanProblem, teamId: number): Refusal {
  switch (problem.kind) {
    case 'slugTaken':
      return {
        collection: 'teams',
        id: String(teamId),
        problem: `slug "${problem.team.identity.slug}" is used by team ${problem.holder}`,
        teamId,
        part: 'team',
      };
    case 'slugCycle':
      return {
        collection: 'teams',
        id: String(teamId),
        problem: `slug "${problem.team.identity.slug}" is held by ${problem.holder.where}`,
        teamId,
        part: 'team',
      };
    case 'tooManyTeams':
      return {
        collection: 'users',
        id: String(problem.userId),
        problem: `would be a member of ${problem.teams} teams, more than ${problem.limit}`,
        teamId,
        part: 'members',
      };
    case 'tokenOfAnotherUser':
      return {
        collection: 'tokens',
        id: String(problem.token.sanctumId),
        problem: `belongs to user ${problem.owner} here`,
        teamId,
        part: 'token',
      };
  }
}

/** The metrics a sync publishes, by name and unit: the dashboard and the alarms read these (infra/). */
export const SYNC_METRICS = [
  { Name: 'SyncLag', Unit: 'Seconds' },
  { Name: 'SyncChangesApplied', Unit: 'Count' },
  { Name: 'SyncItemsWritten', Unit: 'Count' },
  { Name: 'SyncRowsRefused', Unit: 'Count' },
  { Name: 'SyncSourceErrors', Unit: 'Count' },
] as const;

/**
 * One EMF document:
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
 */
export function syncMetricLine(values: {
  lagSeconds: number;
  changes: number;
  written: number;
  refused: number;
  sourceErrors: number;
}): string {
  return JSON.stringify({
    _aws: {
      Timestamp: Date.now(),
      CloudWatchMetrics: [{ Namespace: METRICS_NAMESPACE, Dimensions: [[]], Metrics: SYNC_METRICS }],
    },
    message: 'sync',
    SyncLag: values.lagSeconds,
    SyncChangesApplied: values.changes,
    SyncItemsWritten: values.written,
    SyncRowsRefused: values.refused,
    SyncSourceErrors: values.sourceErrors,
  });
}
