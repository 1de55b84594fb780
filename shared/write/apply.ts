import { type ListResource, LIST_RESOURCES } from '../table/keys.ts';
import { baseItemKey } from '../table/list-layout.ts';
import { type EmitItem, type ItemNeeds, type ItemSource, itemHash } from './desired.ts';
import { membersFingerprint } from './fingerprint.ts';
import { pendingItem, resourceItem } from './items.ts';
import { listHashRequests } from './list-hashes.ts';
import { clearDeadWriters, clearOrphanVersions, sweepReplaced } from './ledger.ts';
import { changeMembers } from './memberships.ts';
import { type Plan, planList, readMembers, readTeamStates, type TeamPlan } from './plan.ts';
import { onlyMembers, recordMembers, removeTeamItems, switchUnit, TeamChanged } from './team-switch.ts';
import { narrowTokens, widenTokens, writeUserNames } from './token-steps.ts';
import { bulkRef, putRequest, requestWriter, type Writer, writeRequests } from './writer.ts';

/**
 * A write of the table over one plan (docs/contract.md, sections 7 and 9; docs/storage.md). An import
 * and a sync run the same steps; only where the desired state and the items come from differs.
 *
 * 1. The plan (plan.ts): what each team, user and token should be against what the table holds.
 * 2. What dead writers left is cleared; tokens that go are removed and tokens that lose rights
 *    narrowed: in force before any team switches.
 * 3. Beside what readers use: users' names, and every list written whole (a new generation,
 *    reserved in the ledger first, so whatever a killed writer wrote, the next one finds).
 * 4. Each unit of teams (a team, or teams tied by the slugs they hand on), under its teams' locks:
 *    checked against the plan (and planned again where another writer changed it meanwhile), its
 *    changed items written, then switched in one transaction; members who leave lose it just before,
 *    members who join gain it just after.
 * 5. Tokens widened and written, what retention allows swept.
 */

export interface ApplyHooks {
  /** Told as the write goes; an async observer is awaited (the write waits for it). */
  onProgress?: (progress: { phase: 'writing' | 'switching'; done: number; total: number }) => void | Promise<void>;
  /** Told once when a team's lock is held by another writer and has to be waited for. */
  onWait?: (line: string) => void;
  /**
   * Whether the write waits for the sweep it ends with (the default: a command ends once its work is
   * done), or leaves it running: a sync's next changes must not wait for it, and a generation of
   * 100,000 items replaced takes at least 100 s to delete at one key's 1,000 write units a second.
   */
  sweep?: 'wait' | 'background';
}

/** Thrown when the items handed for a list are not the ones the plan counted. */
export class ItemsChanged extends Error {
  constructor(detail: string) {
    super(detail);
    this.name = 'ItemsChanged';
  }
}

/** Steps 2 to 5. `items` hands the JSON of the items the plan writes (and may hand more: they are skipped). */
export async function applyPlan(writer: Writer, plan: Plan, items: ItemSource, hooks: ApplyHooks = {}) {
  await narrowTokens(writer, plan.tokens);
  await writeUserNames(writer, plan.users.written);
  const json = await writeBeside(writer, plan, items, hooks);
  for (const team of plan.removedTeams) {
    const id = team.stored.identity.id;
    await underLocks(writer, [id], hooks, async () => {
      await changeMembers(writer, id, team.stored.membersGeneration, team.leaving, 'DELETE');
      await removeTeamItems(writer, team);
    });
  }
  await switchUnits(writer, plan, json, items, hooks);
  await widenTokens(writer, plan.tokens, plan.users.removed, plan.startedAt);
  const swept = sweep(writer);
  if (hooks.sweep !== 'background') await swept;
  return { itemsWritten: json.written };
}

/**
 * The sweep after a write: what dead writers left pending, then what retention allows removed. One at
 * a time for each writer (a command's run: its lease's owner) and table, and at most one a minute: it reads every shard of the
 * ledger three times (48 strongly consistent Queries, at least one read unit each, most finding
 * nothing), so a sweep per batch of the sync would cost each change more reads than its writes cost
 * it. Nothing replaced is due until SWEEP_AFTER_MS, so a minute later is well within the minute it adds
 * to the contract's 5; what a dead writer left pending, no reader ever used. A write that asks while one runs, a minute or more
 * after it started (a clock moved on, in tests), has it go round once more when it is done, at the clock
 * then, so that what that write made due is not left for a later write.
 */
const SWEEP_EVERY_MS = 60_000;
const sweeps = new Map<string, { done: Promise<void>; again: boolean; at: number; running: boolean }>();

/** What retention allows removed (ledger.ts); never fails: what is left, a later write removes. */
function sweep(writer: Writer): Promise<void> {
  const now = writer.clock();
  const key = `${writer.tableName} ${writer.owner}`;
  const last = sweeps.get(key);
  // A clock set back (a test's) sweeps at once.
  if (last && now >= last.at && now - last.at < SWEEP_EVERY_MS) return last.done;
  if (last?.running) {
    last.again = true;
    return last.done;
  }
  const state = { done: Promise.resolve(), again: true, at: now, running: true };
  state.done = (async () => {
    try {
      while (state.again) {
        state.again = false;
        state.at = writer.clock();
        await clearDeadWriters(writer);
        await sweepReplaced(writer, state.at);
      }
    } catch (error) {
      // Everything is written by now: what is left to remove, the next write removes.
      writer.log(
        `the write is complete, but removing replaced items stopped (${(error as Error).message}); ` +
          'the next write will finish it',
      );
    } finally {
      state.running = false;
    }
  })();
  sweeps.set(key, state);
  return state.done;
}

/** The JSON step 4 needs (items of lists changed by the item), and how many items step 3 wrote. */
interface Gathered {
  byTeam: Map<number, Map<ListResource, Map<number, string>>>;
  written: number;
}

/**
 * Step 3: every list written whole goes to a new generation beside the one readers use, each item at
 * the slot of its id's rank; the JSON of items changed by the item is kept for step 4. One pass of
 * the front end's items for the whole write (an import reads its file once).
 */
async function writeBeside(
  writer: Writer,
  plan: Plan,
  items: ItemSource,
  { onProgress }: ApplyHooks,
): Promise<Gathered> {
  const gathered: Gathered = { byTeam: new Map(), written: 0 };
  const needs: ItemNeeds = new Map();
  const rebuilds = new Map<
    string,
    {
      teamId: number;
      list: ListResource;
      ids: ArrayLike<number>;
      generation: string;
      seen: number;
      /** The items' hashes as planned, while every item handed over has its planned hash (list-hashes.ts). */
      hashes?: ArrayLike<bigint>;
    }
  >();
  for (const team of plan.units.flat()) {
    const teamId = team.desired.identity.id;
    for (const list of LIST_RESOURCES) {
      const planned = team.lists[list];
      if (!planned) continue;
      const asked = needs.get(teamId) ?? needs.set(teamId, new Map()).get(teamId)!;
      if (planned.mode === 'rebuild') {
        asked.set(list, 'all');
        const { generation } = planned.part.layout;
        const { ids, hashes } = planned;
        rebuilds.set(`${teamId}#${list}`, { teamId, list, ids, generation, seen: 0, hashes });
      } else if (planned.needs.size > 0) asked.set(list, planned.needs);
    }
  }
  if (needs.size === 0) return gathered;
  // Reserved first: a writer killed while it writes leaves the ledger to say whose items these are.
  await writeRequests(
    writer,
    [...rebuilds.values()].map((r) =>
      putRequest(pendingItem(r.teamId, r.generation, r.list, writer.owner, plan.startedAt)),
    ),
  );
  const total = [...rebuilds.values()].reduce((n, r) => n + r.ids.length, 0);
  let done = 0;
  if (total > 0) await onProgress?.({ phase: 'writing', done, total });
  const batch = requestWriter(bulkRef(writer), undefined, (count) => {
    done += count;
    return onProgress?.({ phase: 'writing', done, total });
  });
  const emit: EmitItem = (teamId, list, id, json) => {
    const rebuild = rebuilds.get(`${teamId}#${list}`);
    if (rebuild) {
      const slot = rankOf(rebuild.ids, id);
      if (slot === 0) throw new ItemsChanged(`team ${teamId}: ${list} ${id} was not planned`);
      rebuild.seen += 1;
      if (rebuild.hashes && rebuild.hashes[slot - 1] !== itemHash(json)) rebuild.hashes = undefined;
      return batch.add(putRequest(resourceItem(teamId, rebuild.generation, list, baseItemKey(slot), json)));
    }
    const asked = needs.get(teamId)?.get(list);
    if (asked === undefined || (asked !== 'all' && !asked.has(id))) return;
    keep(gathered, teamId, list, id, json);
  };
  await items(needs, emit);
  await batch.flush();
  for (const r of rebuilds.values()) {
    if (r.seen !== r.ids.length)
      throw new ItemsChanged(`team ${r.teamId}: ${r.seen} ${r.list} instead of ${r.ids.length}`);
  }
  gathered.written = batch.written;
  // Beside the items, what a later diff compares with instead of reading them (list-hashes.ts): only
  // where every item written is the one planned (else that diff reads the list whole).
  const hashed = [...rebuilds.values()].flatMap((r) =>
    r.hashes ? listHashRequests(r.teamId, r.generation, r.list, r.ids, r.hashes) : [],
  );
  await writeRequests(bulkRef(writer), hashed);
  return gathered;
}

/** Keeps an item's JSON for step 4. */
function keep(gathered: Gathered, teamId: number, list: ListResource, id: number, json: string) {
  const byList = gathered.byTeam.get(teamId) ?? gathered.byTeam.set(teamId, new Map()).get(teamId)!;
  (byList.get(list) ?? byList.set(list, new Map()).get(list)!).set(id, json);
}

/** The 1-based rank of `id` among sorted ids, or 0 when it is not there. */
function rankOf(sorted: ArrayLike<number>, id: number): number {
  let low = 0;
  let high = sorted.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const value = sorted[middle]!;
    if (value < id) low = middle + 1;
    else if (value > id) high = middle - 1;
    else return middle + 1;
  }
  return 0;
}

/**
 * Step 4, unit by unit in the plan's order. Where the slugs' order makes a team that a user joins
 * switch before one she leaves, she leaves that one before any switch: a right taken away is in force
 * no later than one granted (docs/contract.md, section 9).
 */
async function switchUnits(writer: Writer, plan: Plan, gathered: Gathered, items: ItemSource, hooks: ApplyHooks) {
  const { units } = plan;
  const firstJoin = new Map<number, number>();
  units.forEach((unit, at) => {
    for (const userId of unit.flatMap((team) => team.joining)) if (!firstJoin.has(userId)) firstJoin.set(userId, at);
  });
  const early = new Map<TeamPlan, number[]>();
  units.forEach((unit, at) => {
    for (const team of unit) {
      const users = team.leaving.filter((userId) => (firstJoin.get(userId) ?? at) < at);
      if (users.length > 0) early.set(team, users);
    }
  });
  for (const [team, users] of early) {
    const id = team.desired.identity.id;
    await underLocks(writer, [id], hooks, () =>
      changeMembers(writer, id, team.next.membersGeneration, users, 'DELETE'),
    );
  }
  let done = 0;
  for (const unit of units) {
    const ids = unit.map((team) => team.desired.identity.id);
    await underLocks(writer, ids, hooks, async (tookOver) => {
      for (const team of unit) await refreshTeam(writer, team, gathered, items, tookOver.has(team.desired.identity.id));
      for (const team of unit) {
        const left = early.get(team) ?? [];
        const leaving = team.leaving.filter((userId) => !left.includes(userId));
        if (leaving.length > 0)
          await changeMembers(writer, team.desired.identity.id, team.next.membersGeneration, leaving, 'DELETE');
        await writeEdits(writer, team, gathered);
      }
      await switchUnit(writer, unit);
      for (const team of unit) await membersJoin(writer, team);
    });
    done += unit.length;
    await hooks.onProgress?.({ phase: 'switching', done, total: units.flat().length });
  }
}

/**
 * Under the team's lock: the team as it is now. Another writer may have changed it since the plan was
 * read (a sync beside an import): its parts are planned again from what it holds now, the JSON they
 * need asked of the front end again where step 3 did not keep it. A lock taken over from a writer that
 * died first clears what that writer left in the team's lists.
 */
async function refreshTeam(writer: Writer, team: TeamPlan, gathered: Gathered, items: ItemSource, tookOver: boolean) {
  const id = team.desired.identity.id;
  const now = (await readTeamStates(writer, [id])).get(id);
  if (tookOver && now) for (const list of LIST_RESOURCES) await clearOrphanVersions(writer, id, list, now.lists[list]);
  const same =
    now?.revision === team.stored?.revision &&
    LIST_RESOURCES.every((list) => now?.lists[list].layout.revision === team.stored?.lists[list].layout.revision);
  if (same) return;
  if (!now && team.stored) throw new TeamChanged(id, new Error('the team was removed meanwhile'));
  team.stored = now;
  const recordChanges = !now || ['identity', 'finance', 'members'].some((part) => team.changes.has(part as never));
  team.next = {
    ...team.next,
    revision: (now?.revision ?? 0) + (recordChanges ? 1 : 0),
    membersGeneration: now?.membersGeneration ?? team.next.membersGeneration,
  };
  const missing: ItemNeeds = new Map();
  for (const list of LIST_RESOURCES) {
    const given = team.desired[list];
    const planned = team.lists[list];
    // A list written whole beside stays as planned: it is what the front end says the list is.
    if (!given || planned?.mode === 'rebuild') continue;
    const replanned = await planList(writer, id, list, given, now?.lists[list], writer.clock());
    if (replanned?.mode === 'rebuild') throw new TeamChanged(id, new Error(`its ${list} changed too much meanwhile`));
    if (replanned) team.lists[list] = replanned;
    else delete team.lists[list];
    team.next.lists[list] = replanned?.part ?? now!.lists[list];
    const kept = gathered.byTeam.get(id)?.get(list);
    const lacking = [...(replanned?.needs ?? [])].filter((itemId) => !kept?.has(itemId));
    if (lacking.length > 0) missing.set(id, new Map([[list, new Set(lacking)]]));
  }
  if (missing.size > 0) {
    await items(missing, (teamId, list, itemId, json) => keep(gathered, teamId, list, itemId, json));
  }
  await readMembers(writer, [team]);
}

/** A unit's lists changed by the item: their new items, at the keys the plan gave them, before the switch. */
async function writeEdits(writer: Writer, team: TeamPlan, gathered: Gathered): Promise<void> {
  const id = team.desired.identity.id;
  for (const list of LIST_RESOURCES) {
    const planned = team.lists[list];
    if (planned?.mode !== 'edit' || planned.edited.writes.length === 0) continue;
    const kept = gathered.byTeam.get(id)?.get(list);
    const { generation } = planned.part.layout;
    const requests = planned.edited.writes.map((write) => {
      const json = planned.needs.has(write.id) ? kept?.get(write.id) : write.json;
      if (json === undefined) throw new ItemsChanged(`team ${id}: ${list} ${write.id} was not handed over`);
      return putRequest(resourceItem(id, generation, list, write.key, json));
    });
    await writeRequests(writer, requests, id);
  }
}

/** After its switch: members who join, then the members' fingerprint. */
async function membersJoin(writer: Writer, team: TeamPlan): Promise<void> {
  const { desired, stored, next, changes } = team;
  const id = desired.identity.id;
  if (team.joining.length > 0) await changeMembers(writer, id, next.membersGeneration, team.joining, 'ADD');
  if (changes.has('members'))
    await recordMembers(writer, onlyMembers(team) ? stored! : next, membersFingerprint(desired.memberIds!));
}

/** Runs `work` holding the locks of these teams (taken in id order, so two writers never wait on each other). */
export async function underLocks<T>(
  writer: Writer,
  teamIds: number[],
  hooks: ApplyHooks,
  work: (tookOver: ReadonlySet<number>) => Promise<T>,
): Promise<T> {
  const tookOver = new Set<number>();
  const taken: number[] = [];
  try {
    for (const teamId of [...new Set(teamIds)].sort((a, b) => a - b)) {
      if ((await writer.locks.lock(teamId, hooks.onWait)).tookOver) tookOver.add(teamId);
      taken.push(teamId);
    }
    return await work(tookOver);
  } finally {
    await Promise.all(taken.map((teamId) => writer.locks.unlock(teamId).catch(() => {})));
  }
}
