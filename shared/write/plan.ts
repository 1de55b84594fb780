import {
  LIST_RESOURCES,
  type ListResource,
  listHeadKey,
  memberPartition,
  memberUserIdOf,
  teamFinanceKey,
  teamRecordKey,
} from '../table/keys.ts';
import { overlayBytes } from '../table/list-layout.ts';
import { forEachConcurrently } from './concurrently.ts';
import { type DesiredList, type DesiredState, type DesiredTeam, isWhole, itemHash, type WholeList } from './desired.ts';
import { ListFingerprint, membersFingerprint } from './fingerprint.ts';
import { type ListPart, newGenerationId, readListPart, readTeamRecord, type TeamState } from './items.ts';
import { denseLayout, type EditedList, editList, OVERLAY_COMPACT_BYTES, type StoredItem } from './list-edits.ts';
import { readStoredHashes } from './list-hashes.ts';
import { readStoredAround } from './list-store.ts';
import { orderUnits, type SlugProblem } from './plan-order.ts';
import {
  planTokens,
  planUsers,
  TEAMS_PER_USER,
  type TokenPlan,
  type TokenProblem,
  type UserPlan,
} from './plan-tokens.ts';
import { readItems, queryAll } from './reads.ts';
import type { TableRef } from './writer.ts';

/**
 * Step 1 of a write (apply.ts): what the table should hold, compared with what it holds, as one plan
 * that every later step reads. Both front ends (the import, the sync) plan here, once per write.
 *
 * A team has parts that change alone (docs/contract.md, sections 7 and 9): its identity (slug, name),
 * its projects, its daemons, its finance summary and its members. Every part, team, user and token
 * that would not change is left out, so a write costs what it changes. A list changes by the item
 * (list-edits.ts) when few of its items differ, and is written whole, dense, as a new generation
 * beside the old one when many do or when it is new (docs/storage.md).
 */

export interface PlanOptions {
  /** When the write began (wall-clock ms): new generation ids. */
  startedAt: number;
  /**
   * A token whose hash the table holds for another user: an import refuses the snapshot (a token
   * cannot move to another user); a sync follows the source, which says whose it is.
   */
  tokenOfAnotherUser: 'refuse' | 'move';
  /**
   * Teams that swap slugs (a cycle no order can free): an import refuses them (rename in two
   * imports); a sync, which must follow the source, switches them together in one transaction.
   */
  slugCycles?: 'refuse' | 'together';
}

/** A part of a team that changes alone. */
export type TeamPart = 'identity' | ListResource | 'finance' | 'members';

/**
 * How a list changes: by the item (its new items' keys known, their JSON handed over by the front end
 * where the plan had only their hashes), or whole as a new dense generation.
 */
type ListPlan =
  | { mode: 'edit'; edited: EditedList; part: ListPart; needs: ReadonlySet<number> }
  | {
      mode: 'rebuild';
      part: ListPart;
      ids: ArrayLike<number>;
      /** The items' hashes, at their ids' places: kept beside the new generation (list-hashes.ts). */
      hashes?: ArrayLike<bigint>;
    };

/** One team's change: what it becomes, and how. */
export interface TeamPlan {
  desired: DesiredTeam;
  /** The team as stored; absent for a team the table does not hold. */
  stored?: TeamState;
  /** The team after the switch. */
  next: TeamState;
  changes: Set<TeamPart>;
  lists: Partial<Record<ListResource, ListPlan>>;
  /** Members to add after the switch, and to take away before it. */
  joining: number[];
  leaving: number[];
  /** The stored finance fields, when the slug moves and the summary itself is kept. */
  keptFinanceJson?: string;
}

/** A team that goes, with the members who lose it first. */
export interface RemovedTeamPlan {
  stored: TeamState;
  leaving: number[];
}

export type PlanProblem =
  | SlugProblem
  | TokenProblem
  | { kind: 'tooManyTeams'; userId: number; teams: number; limit: number };

export interface Plan {
  startedAt: number;
  /**
   * Teams that change, as the units they switch in, in order: a team alone, or teams tied by the
   * slugs they hand each other (one transaction); a team that takes a slug after the team that gives
   * it up, and teams whose members only leave before those whose members join.
   */
  units: TeamPlan[][];
  /** Teams that go: they switch first, giving up their slugs. */
  removedTeams: RemovedTeamPlan[];
  tokens: TokenPlan;
  users: UserPlan;
  problems: PlanProblem[];
}

/**
 * A list changes by the item while few of its items differ: at most this many, and at most a quarter
 * of the list; more, and writing it whole costs about as much and leaves no overlay.
 */
const EDITS_AT_MOST = 1_000;

/** Whether the plan writes nothing at all. */
export function isEmpty(plan: Plan): boolean {
  const { units, removedTeams, tokens, users } = plan;
  const writesTokens =
    tokens.created.length + tokens.removed.length + tokens.indexed.length > 0 || tokens.kept.length > 0;
  return (
    units.length === 0 &&
    removedTeams.length === 0 &&
    !writesTokens &&
    users.written.length + users.removed.length === 0
  );
}

/** The teams of the plan that change, in order. */
export const plannedTeams = (plan: Plan) => plan.units.flat();

/** Reads the teams' records and list heads (by id): the state of each, or undefined where there is none. */
export async function readTeamStates(table: TableRef, teamIds: Iterable<number>): Promise<Map<number, TeamState>> {
  const ids = [...new Set(teamIds)];
  const keys = ids.flatMap((id) => [teamRecordKey(id), ...LIST_RESOURCES.map((list) => listHeadKey(id, list))]);
  const items = await readItems(table, keys);
  const states = new Map<number, TeamState>();
  for (const record of items.filter((item) => item.sk === 'TEAM')) {
    const id = Number(record.team_id);
    const head = (list: ListResource) => items.find((item) => item.pk === record.pk && item.sk === `LIST#${list}`);
    const projects = head('projects');
    const daemons = head('daemons');
    if (!projects || !daemons) continue;
    states.set(id, {
      ...readTeamRecord(record),
      lists: { projects: readListPart(projects), daemons: readListPart(daemons) },
    });
  }
  return states;
}

/** Step 1: reads what the plan depends on, and compares. Nothing is written. */
export async function readPlan(table: TableRef, desired: DesiredState, options: PlanOptions): Promise<Plan> {
  const problems: PlanProblem[] = [];
  const removedIds = new Set(desired.removedTeams ?? []);
  const desiredIds = new Set(desired.teams.map((team) => team.identity.id));
  const states = await readTeamStates(table, [...desiredIds, ...removedIds]);
  const slugHolders = await readSlugHolders(
    table,
    desired.teams.flatMap((team) => team.identity.slug ?? []),
  );

  // Teams planned side by side: each reads its own lists (a backlog of many teams waits for none).
  const planned = new Array<TeamPlan>(desired.teams.length);
  await forEachConcurrently(desired.teams.keys(), async (index) => {
    const team = desired.teams[index]!;
    planned[index] = await planTeam(table, team, states.get(team.identity.id), options.startedAt);
  });
  const teams = planned.filter((plan) => plan.changes.size > 0);
  await readMembers(table, teams);
  await readKeptFinance(table, teams);

  const removedTeams: RemovedTeamPlan[] = [];
  for (const id of removedIds) {
    const stored = states.get(id);
    if (!stored) continue;
    const members = await queryAll(table.doc, table.tableName, memberPartition(id, stored.membersGeneration), {
      keysOnly: true,
    });
    removedTeams.push({ stored, leaving: members.map(memberUserIdOf) });
  }

  const change = new Map<number, number>();
  const count = (ids: number[], by: number) => {
    for (const id of ids) change.set(id, (change.get(id) ?? 0) + by);
  };
  for (const team of teams) {
    count(team.joining, 1);
    count(team.leaving, -1);
  }
  for (const team of removedTeams) count(team.leaving, -1);
  const { plan: users, teamsOf } = await planUsers(table, desired, [...change.keys()]);
  for (const [id, by] of change) {
    const after = teamsOf(id).length + by;
    if (by > 0 && after > TEAMS_PER_USER)
      problems.push({ kind: 'tooManyTeams', userId: id, teams: after, limit: TEAMS_PER_USER });
  }
  const tokens = await planTokens(table, desired, options.tokenOfAnotherUser, problems as TokenProblem[]);
  const units = orderUnits(teams, removedIds, slugHolders, problems, options.slugCycles ?? 'refuse');
  return { startedAt: options.startedAt, units, removedTeams, tokens, users, problems };
}

/** Which team holds each slug now (by its projects head, which every team has). */
export async function readSlugHolders(table: TableRef, slugs: string[]): Promise<Map<string, number>> {
  const items = await readItems(
    table,
    slugs.map((slug) => listHeadKey(slug, 'projects')),
  );
  return new Map(items.map((item) => [String(item.pk).slice('TEAMREF#'.length), Number(item.team_id)]));
}

/** What changes in one team, and the team after its switch. */
async function planTeam(table: TableRef, desired: DesiredTeam, stored: TeamState | undefined, startedAt: number) {
  const changes = new Set<TeamPart>();
  const { identity } = desired;
  if (!stored || stored.identity.slug !== identity.slug || stored.identity.name !== identity.name)
    changes.add('identity');
  const lists: TeamPlan['lists'] = {};
  const nextLists = {} as TeamState['lists'];
  for (const list of LIST_RESOURCES) {
    const given = desired[list];
    const kept = stored?.lists[list];
    if (!given) {
      if (!kept) throw new Error(`team ${identity.id} is not in the table, and its ${list} are not given`);
      nextLists[list] = kept;
      continue;
    }
    const planned = await planList(table, identity.id, list, given, kept, startedAt);
    if (planned) {
      lists[list] = planned;
      changes.add(list);
    }
    nextLists[list] = planned?.part ?? kept!;
  }
  if (!stored && !desired.finance)
    throw new Error(`team ${identity.id} is not in the table, and its finance is not given`);
  const financeFingerprint = desired.finance?.fingerprint ?? stored!.financeFingerprint;
  if (!stored || financeFingerprint !== stored.financeFingerprint) changes.add('finance');
  const members = desired.memberIds && membersFingerprint(desired.memberIds);
  if (members !== undefined && members !== stored?.membersFingerprint) changes.add('members');
  // The record is written (and its revision grows) with the identity, finance or members; a list
  // switches alone, on its own revision.
  const recordChanges = !stored || changes.has('identity') || changes.has('finance') || changes.has('members');
  const next: TeamState = {
    identity,
    revision: (stored?.revision ?? 0) + (recordChanges ? 1 : 0),
    // A team the table does not hold starts a members generation of its own: no entry left on a
    // token by an earlier team of the same id can name it.
    membersGeneration: stored?.membersGeneration ?? newGenerationId(startedAt),
    // The fingerprint of the members is written once they have joined and left (apply.ts).
    membersFingerprint: stored?.membersFingerprint ?? '',
    financeFingerprint,
    lists: nextLists,
  };
  return { desired, stored, next, changes, lists, joining: [], leaving: [] } satisfies TeamPlan;
}

/** How one list changes, or undefined when it does not. */
export async function planList(
  table: TableRef,
  teamId: number,
  list: ListResource,
  given: DesiredList,
  kept: ListPart | undefined,
  startedAt: number,
): Promise<ListPlan | undefined> {
  if (isWhole(given)) {
    if (kept && kept.fingerprint === given.fingerprint && kept.layout.count === given.count) return undefined;
    if (kept) {
      const stored = await readStoredHashes(table, teamId, list, kept);
      const edits = differences(stored, given);
      if (edits.length === 0) return undefined;
      if (edits.length <= EDITS_AT_MOST && edits.length * 4 <= Math.max(stored.length, given.count)) {
        // Placeholders stand for the JSON the front end hands over later: keys depend on ids alone.
        const edited = editList(
          kept.layout,
          stored,
          edits.map(({ id, present }) => ({ id, json: present ? `\u0000${id}` : null })),
        );
        if (overlayBytes(edited.layout) <= OVERLAY_COMPACT_BYTES) {
          const needs = new Set(edits.filter((edit) => edit.present).map((edit) => edit.id));
          return { mode: 'edit', edited, part: { layout: edited.layout, fingerprint: given.fingerprint }, needs };
        }
      }
    }
    const generation = newGenerationId(startedAt);
    const layout = denseLayout(generation, given.count, (kept?.layout.revision ?? 0) + 1);
    return { mode: 'rebuild', part: { layout, fingerprint: given.fingerprint }, ids: given.ids, hashes: given.hashes };
  }
  if (!kept) throw new Error(`team ${teamId} is not in the table, and its ${list} are given by the item`);
  // Only the items around the edits are read: a change costs what it changes, at any list size.
  const ids = given.edits.map((edit) => edit.id);
  const { stored, located } = await readStoredAround(table, teamId, list, kept, ids);
  const edited = editList(kept.layout, stored, given.edits, located);
  if (edited.writes.length === 0 && edited.replaced.length === 0) return undefined;
  const fingerprint = new ListFingerprint(kept.fingerprint);
  for (const json of edited.left) fingerprint.remove(json);
  for (const json of edited.came) fingerprint.add(json);
  return { mode: 'edit', edited, part: { layout: edited.layout, fingerprint: fingerprint.value() }, needs: new Set() };
}

/** The ids where a stored list and one given whole differ: present in the given one (to write) or not (to remove). */
function differences(stored: readonly StoredItem[], given: WholeList) {
  const edits: { id: number; present: boolean }[] = [];
  const hashes = new Map(stored.map((item) => [item.id, item]));
  for (let i = 0; i < given.ids.length; i++) {
    const id = given.ids[i]!;
    const item = hashes.get(id);
    hashes.delete(id);
    if (!item || itemHashOf(item) !== given.hashes[i]) edits.push({ id, present: true });
  }
  for (const id of hashes.keys()) edits.push({ id, present: false });
  return edits;
}

const itemHashOf = (item: StoredItem) => item.hash ?? itemHash(item.json);

/** Who joins and who leaves, for the teams whose members change: from the member index, not the user items. */
export async function readMembers(table: TableRef, teams: TeamPlan[]): Promise<void> {
  for (const team of teams) {
    if (!team.changes.has('members')) continue;
    const wanted = new Set(team.desired.memberIds);
    const stored = team.stored
      ? (
          await queryAll(
            table.doc,
            table.tableName,
            memberPartition(team.desired.identity.id, team.stored.membersGeneration),
            {
              keysOnly: true,
            },
          )
        ).map(memberUserIdOf)
      : [];
    const had = new Set(stored);
    team.joining = [...wanted].filter((id) => !had.has(id));
    team.leaving = stored.filter((id) => !wanted.has(id));
  }
}

/** The stored finance fields of teams whose slug moves while the summary itself stays. */
async function readKeptFinance(table: TableRef, teams: TeamPlan[]): Promise<void> {
  const kept = teams.filter((team) => team.changes.has('identity') && !team.desired.finance && team.stored);
  const items = await readItems(
    table,
    kept.map((team) => teamFinanceKey(team.desired.identity.id)),
  );
  for (const team of kept) {
    const item = items.find((i) => Number(i.team_id) === team.desired.identity.id);
    team.keptFinanceJson = item ? String(item.finance) : undefined;
  }
}
