import { LIST_RESOURCES, teamRecordKey } from '../table/keys.ts';
import { type ApplyHooks, applyPlan } from '../write/apply.ts';
import { compactList } from '../write/compaction.ts';
import { needsCompaction } from '../write/list-edits.ts';
import type { ItemSource } from '../write/desired.ts';
import { isEmpty, type Plan, type PlanProblem, readPlan, readSlugHolders, type TeamPlan } from '../write/plan.ts';
import { readItems } from '../write/reads.ts';
import type { Writer } from '../write/writer.ts';
import { desiredOf, type ReadBatch } from './desired-of.ts';
import { type ChangePart, type Mapping, watchedTables } from './mapping.ts';
import { readTeam, type SourceTeam, type TeamAsk } from './read/team.ts';
import { readTokens } from './read/tokens.ts';
import type { Refusal, RefusalReport } from './refusals.ts';
import type { SourceConnection } from './source/connection.ts';
import { sourceFault } from './source/faults.ts';
import { idOf, type Touched } from './touches.ts';
import { readChangedUsers } from './users.ts';

/**
 * One batch of the sync (docs/contract.md, section 9): what the log's changes touched (or a full
 * pass's teams), read again in one snapshot of the source that lasts only while it reads, then
 * planned once and written through the writers' one path (shared/write/apply.ts), never holding the
 * snapshot while it writes. Every right taken away (a token narrowed or gone, a member leaving any of
 * these teams) is in force before any is granted, and a slug handed from one team to another moves in
 * the order that frees it first. A team whose rows or plan break a rule is left out, said once, and
 * kept as it was; the rest go on. A team whose lists write many items (a first load, a transaction of
 * thousands of rows) is written apart, beside the batch, so that no small change waits for it.
 */

export interface BatchContext {
  source: SourceConnection;
  mapping: Mapping;
  timezone: string;
  writer: Writer;
  refusals: RefusalReport;
  /**
   * Teams left out whole (a bad team row, a problem of the plan), with the parts whose changes came
   * meanwhile: read again with the team's next change.
   */
  heldBack: Map<number, Set<ChangePart>>;
  /** Said once while it lasts: a query the source's schema no longer answers (the source's error). */
  schemaProblem: (failure: string) => void;
  hooks?: ApplyHooks;
}

export interface BatchOutcome {
  /** Rows refused in this batch (said once each). */
  refused: number;
  /** Teams written apart (many items), done when `apart` settles. */
  apartTeams: number[];
  apart: Promise<void>;
  /** The compaction of those teams' lists that need it, begun once `apart` is written. */
  compacted: Promise<void>;
}

const ALL_PARTS: readonly ChangePart[] = ['team', 'members', 'projects', 'daemons', 'finance'];
/** Items of a team's lists past which it is written apart from its batch. */
const WRITTEN_APART_FROM = 1_000;

export async function applyBatch(ctx: BatchContext, touched: Touched): Promise<BatchOutcome> {
  // A snapshot taken before a table-rewriting ALTER TABLE sees that table empty on PostgreSQL
  // (https://www.postgresql.org/docs/current/mvcc-caveats.html): its tables are locked before it is
  // taken, so that a rewrite comes before it or waits for its end.
  const tables =
    ctx.source.engine !== 'postgres'
      ? []
      : await ctx.source.query(
          "SELECT relname FROM pg_class WHERE relname = ANY(?) AND relkind IN ('r', 'p') AND pg_table_is_visible(oid)",
          [watchedTables(ctx.mapping)],
        );
  const read = await ctx.source.readConsistently(async () => {
    const names = tables.map((t) => `"${String(t.relname).replaceAll('"', '""')}"`).join(', ');
    if (names) await ctx.source.query(`LOCK TABLE ${names} IN ACCESS SHARE MODE`);
    return readBatch(ctx, touched);
  });
  const { plan, leftOut } = await planBatch(ctx, read);
  const items: ItemSource = async (needs, emit) => {
    for (const [teamId, lists] of needs) {
      for (const [list, asked] of lists) {
        for (const [id, json] of read.teams.get(teamId)?.team.json.get(list) ?? []) {
          if (asked === 'all' || asked.has(id)) await emit(teamId, list, id, json);
        }
      }
    }
  };
  const { now, apart } = splitApart(plan);
  // What the write replaced is swept beside the next batches, not before them (apply.ts).
  const hooks: ApplyHooks = { ...ctx.hooks, sweep: 'background' };
  if (!isEmpty(now)) await applyPlan(ctx.writer, now, items, hooks);
  // Lists whose overlay has grown past its budget are written dense again, beside (compaction.ts).
  const compact = (teams: TeamPlan[]) =>
    Promise.all(
      teams.flatMap((team) =>
        LIST_RESOURCES.filter((list) => {
          const planned = team.lists[list];
          return planned?.mode === 'edit' && needsCompaction(planned.part.layout);
        }).map((list) => compactList(ctx.writer, team.desired.identity.id, list)),
      ),
    );
  const written = Promise.all([
    ...apart.map((unit) => applyPlan(ctx.writer, unitPlan(plan, unit), items, hooks)),
    compact(now.units.flat()),
  ]).then(() => {});
  // A unit written apart is compacted once written, and its team takes its changes meanwhile.
  const compacted = written.then(() => compact(apart.flat())).then(() => {});
  // Observed by the applier; a failure of its own is not an unhandled rejection meanwhile.
  written.catch(() => {});
  compacted.catch(() => {});
  // A team being compacted keeps taking its changes by the item meanwhile: the compaction catches up
  // with them under the team's lock before it switches (compaction.ts).
  const apartTeams = apart.flat().map((team) => team.desired.identity.id);
  return { refused: report(ctx, read, leftOut), apartTeams, apart: written, compacted };
}

/** Step 1, in the snapshot: the touches resolved, and every team, user and token they name read. */
async function readBatch(ctx: BatchContext, touched: Touched): Promise<ReadBatch> {
  const { source, mapping, timezone, writer } = ctx;
  await resolveTouches(ctx, touched);
  const { users, removedUsers } = await readChangedUsers(source, mapping, writer, touched);
  const teams = new Map<number, { team: SourceTeam; ask: TeamAsk }>();
  const held = new Set<number>();
  const readSome = async (asks: Map<number, TeamAsk>) => {
    const records = await readItems(writer, [...asks.keys()].map(teamRecordKey));
    for (const record of records) held.add(Number(record.team_id));
    for (const [teamId, asked] of asks) {
      // A team the table does not hold yet is read, and written, whole; a held one with the parts
      // whose changes it could not take while it was left out.
      const heldBack = ctx.heldBack.get(teamId);
      const ask: TeamAsk = held.has(teamId)
        ? {
            parts: new Set([...asked.parts, ...(heldBack ?? [])]),
            // A list held back is read whole: the items asked of it are in that read.
            items: Object.fromEntries(
              Object.entries(asked.items ?? {}).filter(([list]) => !heldBack?.has(list as ChangePart)),
            ),
          }
        : { parts: new Set(ALL_PARTS) };
      const read = (ask: TeamAsk) => source.attempt(() => readTeam(source, mapping, teamId, ask, timezone));
      try {
        teams.set(teamId, { team: await read(ask), ask });
      } catch (error) {
        // A query the schema no longer answers (a migration took a column away): the parts that need it
        // are kept as they are, and read again once it does (run.ts checks the schema again); the
        // team's other parts are read and written as ever.
        if (sourceFault(error) !== 'schema') throw error;
        ctx.schemaProblem((error as Error).message);
        const broken = new Set<ChangePart>();
        for (const part of [...ask.parts, ...listsAsked(ask)]) {
          const alone: TeamAsk = ask.parts.has(part)
            ? { parts: new Set([part]) }
            : { parts: new Set(), items: { [part]: ask.items![part as 'projects'] } };
          await read(alone).catch((failure: unknown) => {
            if (sourceFault(failure) !== 'schema') throw failure;
            broken.add(part);
          });
        }
        ctx.heldBack.set(teamId, new Set([...(ctx.heldBack.get(teamId) ?? []), ...broken]));
        const rest: TeamAsk = {
          parts: new Set([...ask.parts].filter((part) => !broken.has(part))),
          items: Object.fromEntries(
            Object.entries(ask.items ?? {}).filter(([list]) => !broken.has(list as ChangePart)),
          ),
        };
        if (rest.parts.size > 0 || listsAsked(rest).length > 0)
          teams.set(teamId, { team: await read(rest), ask: rest });
      }
    }
  };
  await readSome(new Map([...touched.teams.keys()].map((id) => [id, touched.asks(id)])));
  // A slug the table holds for a team not read here: that team may have given it up in the same
  // transaction of the source, so it is read too; each round reads teams not read before, so a
  // chain of handed slugs is followed to its end.
  for (;;) {
    const slugs = [...teams.values()].flatMap(({ team }) => team.desired?.identity.slug ?? []);
    const holders = [...(await readSlugHolders(writer, slugs)).values()].filter((id) => !teams.has(id));
    if (holders.length === 0) break;
    await readSome(new Map(holders.map((id) => [id, { parts: new Set<ChangePart>(['team']) }])));
  }
  const asked = [...touched.tokens];
  const tokens = await readTokens(source, mapping, timezone, { ids: asked });
  return { teams, asked, held, tokens, users, removedUsers };
}

/** The lists a team's touches named by the item. */
const listsAsked = (ask: TeamAsk) =>
  (Object.keys(ask.items ?? {}) as ChangePart[]).filter((list) => ask.items![list as 'projects']?.size);

/** Touches whose team a SELECT over the row gives (a daemon's: its environment's), now resolved. */
async function resolveTouches(ctx: BatchContext, touched: Touched): Promise<void> {
  for (const { touch, row } of touched.unresolved.splice(0)) {
    if (!/^\s*SELECT\b/i.test(touch.team!)) {
      // The log gave no team for the row (a key alone): that part of every team is read again.
      touched.everyTeam.add(touch.part as never);
      continue;
    }
    const params: unknown[] = [];
    const sql = touch.team!.replace(/\{row\.([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, column: string) => {
      params.push(row[column] ?? null);
      return '?';
    });
    let teams: Awaited<ReturnType<SourceConnection['query']>>;
    try {
      teams = await ctx.source.attempt(() => ctx.source.query(`SELECT DISTINCT r.team_id FROM (${sql}) r`, params));
    } catch (error) {
      // The query of the row's team no longer runs (a migration took its table away): that part of
      // every team is read again (and kept as it is while the schema cannot answer it).
      if (sourceFault(error) !== 'schema') throw error;
      ctx.schemaProblem((error as Error).message);
      touched.everyTeam.add(touch.part as never);
      continue;
    }
    for (const found of teams) {
      const teamId = idOf(found.team_id === null ? null : String(found.team_id));
      if (teamId === undefined) continue;
      const itemId = touch.item === undefined ? undefined : idOf(row[touch.item]);
      if (itemId !== undefined && (touch.part === 'projects' || touch.part === 'daemons'))
        touched.item(teamId, touch.part, itemId);
      else touched.team(teamId, touch.part as never);
    }
  }
}

/** Step 2: the plan for every team that keeps the rules, with the problems that left the others out. */
async function planBatch(ctx: BatchContext, read: ReadBatch) {
  const leftOut = new Map<number, Refusal[]>();
  const options = { startedAt: ctx.writer.clock(), tokenOfAnotherUser: 'move', slugCycles: 'together' } as const;
  for (;;) {
    const plan = await readPlan(ctx.writer, desiredOf(read, leftOut), options);
    if (plan.problems.length === 0) return { plan, leftOut };
    const before = leftOut.size;
    for (const problem of plan.problems) {
      // A problem that names no team read here leaves them all out: nothing is written.
      const named = teamsOf(problem, read);
      for (const teamId of named.length > 0 ? named : read.teams.keys()) {
        leftOut.set(teamId, [...(leftOut.get(teamId) ?? []), planRefusal(problem, teamId)]);
      }
    }
    if (leftOut.size === before) return { plan: { ...plan, units: [], removedTeams: [], problems: [] }, leftOut };
  }
}

/** The teams of a batch that a problem of its plan leaves out. */
function teamsOf(problem: PlanProblem, read: ReadBatch): number[] {
  if (problem.kind === 'slugTaken' || problem.kind === 'slugCycle') return [problem.team.identity.id];
  if (problem.kind === 'tooManyTeams') {
    return [...read.teams].flatMap(([id, { team }]) => (team.desired?.memberIds?.includes(problem.userId) ? [id] : []));
  }
  return [];
}

/** A plan's problem as a refused row of the team's own (a slug another team holds, …). */
function planRefusal(problem: PlanProblem, teamId: number): Refusal {
  const refusal = (collection: Refusal['collection'], id: unknown, line: string, part: ChangePart) => ({
    collection,
    id: String(id),
    problem: line,
    teamId,
    part,
  });
  switch (problem.kind) {
    case 'slugTaken':
      return refusal('teams', teamId, `slug "${problem.team.identity.slug}" is used by team ${problem.holder}`, 'team');
    case 'slugCycle':
      return refusal(
        'teams',
        teamId,
        `slug "${problem.team.identity.slug}" is held by ${problem.holder.where}`,
        'team',
      );
    case 'tooManyTeams':
      return refusal(
        'users',
        problem.userId,
        `would be a member of ${problem.teams} teams, more than ${problem.limit}`,
        'members',
      );
    case 'tokenOfAnotherUser':
      return refusal('tokens', problem.token.sanctumId, `belongs to user ${problem.owner} here`, 'token');
  }
}

/**
 * Units written apart: lists that write many items (a list written whole and long, or many items
 * changed at once: a first load, a transaction of 10,000 rows), unless something ties the unit to the
 * rest (a user who leaves one of the other teams and joins it, or the other way round).
 */
function splitApart(plan: Plan): { now: Plan; apart: TeamPlan[][] } {
  const long = (team: TeamPlan) =>
    LIST_RESOURCES.reduce((n, list) => {
      const planned = team.lists[list];
      if (!planned) return n;
      return n + (planned.mode === 'rebuild' ? planned.part.layout.count : planned.edited.writes.length);
    }, 0) > WRITTEN_APART_FROM;
  const meets = (a: number[], b: number[]) => a.some((id) => b.includes(id));
  const others = (unit: TeamPlan[]) => plan.units.filter((other) => other !== unit).flat();
  const tied = (unit: TeamPlan[]) =>
    unit.some((team) =>
      others(unit).some((other) => meets(team.joining, other.leaving) || meets(team.leaving, other.joining)),
    );
  const apart = plan.units.filter((unit) => unit.some(long) && !tied(unit));
  return { now: { ...plan, units: plan.units.filter((unit) => !apart.includes(unit)) }, apart };
}

/** A plan of one unit alone: its teams, nothing else. */
const unitPlan = (plan: Plan, unit: TeamPlan[]): Plan => ({
  startedAt: plan.startedAt,
  units: [unit],
  removedTeams: [],
  tokens: { created: [], indexed: [], kept: [], removed: [] },
  users: { written: [], removed: [] },
  problems: [],
});

/** Refusals said once; teams left out remember the parts they could not take. Returns the rows refused. */
function report(ctx: BatchContext, read: ReadBatch, leftOut: ReadonlyMap<number, Refusal[]>): number {
  let refused = 0;
  for (const [teamId, { team, ask }] of read.teams) {
    const parts = new Set<ChangePart>([...ask.parts, ...Object.keys(ask.items ?? {})] as ChangePart[]);
    if (team.state === 'refused' || leftOut.has(teamId))
      ctx.heldBack.set(teamId, new Set([...(ctx.heldBack.get(teamId) ?? []), ...parts]));
    else {
      // Taken now: the parts read. Those the schema could not answer stay held back (readBatch).
      const still = [...(ctx.heldBack.get(teamId) ?? [])].filter((part) => !parts.has(part));
      if (still.length > 0) ctx.heldBack.set(teamId, new Set(still));
      else ctx.heldBack.delete(teamId);
    }
    const all = [...team.refusals, ...(leftOut.get(teamId) ?? [])];
    ctx.refusals.report(all, (r) => r.teamId === teamId && (parts.has(r.part) || r.part === 'team'));
    refused += all.length;
  }
  const asked = new Set(read.asked.map(String));
  ctx.refusals.report(read.tokens.refusals, (r) => r.part === 'token' && asked.has(r.id));
  return refused + read.tokens.refusals.length;
}
