import { LIST_RESOURCES, type ListResource } from '../table/keys.ts';
import {
  memberPartition,
  memberUserIdOf,
  sanctumKey,
  teamFinanceKey,
  teamHeadKey,
  TOKEN_PREFIX,
  tokenKey,
  userKey,
} from '../table/keys.ts';
import { membersFingerprint, textFingerprint } from './fingerprint.ts';
import { type HeadState, newGenerationId, readHead, type TeamIdentity } from './items.ts';
import { getItems, queryAll } from './reads.ts';
import type { TableRef } from './writer.ts';

/**
 * Step 1 of a write (shared/write/steps.ts): what the table should hold, compared with what it
 * holds, as one plan value that every later step reads. The import builds the desired state from a
 * snapshot, the sync from the source database; both write it through the same steps.
 *
 * A team has parts that change alone (docs/contract.md, sections 7 and 9): its identity (slug,
 * name), its projects, its daemons, its finance summary and its members. The plan compares each
 * part with the fingerprint its head keeps and leaves out every part, team, user and token that
 * would not change, so a write costs what it changes. Nothing is read back but heads, tokens,
 * users, and the member index of a team whose members changed.
 */

/** A list as it should be: how many items, and their fingerprint (shared/write/fingerprint.ts). */
export interface DesiredList {
  count: number;
  fingerprint: string;
}

/**
 * A team as it should be. A part left out (a sync that found a bad row in it) is kept as the
 * table holds it; a team the table does not hold yet needs every part.
 */
export interface DesiredTeam {
  identity: TeamIdentity;
  /** Where it came from, for messages: `teams[3] (id 7)`, or the source's table and id. */
  where: string;
  projects?: DesiredList;
  daemons?: DesiredList;
  /** The finance response's fields (shared/write/finance.ts) and their fingerprint. */
  finance?: { json: string; fingerprint: string };
  /** The team's members, each once. */
  memberIds?: number[];
}

export interface DesiredUser {
  id: number;
  name?: string;
}

export interface DesiredToken {
  /** Where it came from, for messages. */
  where: string;
  /** SHA-256 of the secret: the token's key. */
  hash: string;
  userId: number;
  /** Laravel Sanctum's id of the token: its primary key there, so it names one token here too. */
  sanctumId?: number;
  name?: string;
  abilities: string[];
  expiresAt: string | null;
}

/** What a write asks of the table. Teams, users and tokens not named are left alone. */
export interface DesiredState {
  teams: DesiredTeam[];
  users: DesiredUser[];
  tokens: DesiredToken[];
  /** Teams to remove, by id (a sync: gone from the source). */
  removedTeams?: number[];
  /** Users to remove, by id (a sync: gone from the source); their memberships go with the teams that list them. */
  removedUsers?: number[];
  /** Tokens to remove, by Sanctum id (a sync: deleted in the source, as Sanctum revokes). */
  removedTokens?: number[];
}

export interface PlanOptions {
  /** When the write began (wall-clock ms): new generation ids and token times. */
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

/** One team's change: what it becomes, and how. */
export interface TeamPlan {
  desired: DesiredTeam;
  /** The head as stored; absent for a team the table does not hold. */
  stored?: HeadState;
  /** The head after the switch: new generations for the lists that change. */
  next: HeadState;
  changes: Set<TeamPart>;
  /** Members to add after the switch, and to take away before it. */
  joining: number[];
  leaving: number[];
  /** The stored finance fields, when the slug moves and the summary itself is kept. */
  keptFinanceJson?: string;
}

/** A team that goes, with the members who lose it first. */
export interface RemovedTeamPlan {
  stored: HeadState;
  leaving: number[];
}

/** A stored token, as a writer reads it. */
export interface StoredToken {
  userId: number;
  abilities: string[];
  expiresAt: string | null;
  name?: string;
  sanctumId?: number;
  inactive: boolean;
}

export interface TokenPlan {
  /** Tokens to write inactive, then activate after the last switch. */
  created: DesiredToken[];
  /** Tokens whose Sanctum id's item must name them as they are now (new, changed, or not indexed yet). */
  indexed: DesiredToken[];
  /** Tokens that stay, with what they hold now: narrowed first, widened last. */
  kept: { desired: DesiredToken; stored: StoredToken }[];
  /** Tokens to remove before any switch: gone from the source, or replaced by a token of the same Sanctum id. */
  removed: { hash: string; userId: number; sanctumId?: number }[];
}

export interface UserPlan {
  /** Users to write (new, or renamed), with their name. */
  written: DesiredUser[];
  /** Users whose stored `teams` is a list (written before it was a set): written as a set first. */
  teamsAsSet: { id: number; teams: number[] }[];
  removed: number[];
}

/** Something the table makes impossible, found before the first write. */
export type PlanProblem =
  | { kind: 'slugTaken'; team: DesiredTeam; holder: number }
  | { kind: 'slugCycle'; team: DesiredTeam; holder: DesiredTeam }
  | { kind: 'tokenOfAnotherUser'; token: DesiredToken; owner: number }
  | { kind: 'tooManyTeams'; userId: number; teams: number; limit: number };

export interface Plan {
  startedAt: number;
  /** Teams that change, in the order they switch (a team that takes a slug after the team that gives it up). */
  teams: TeamPlan[];
  /** Groups of teams among `teams` that swap slugs: they switch last, each group in one transaction. */
  together: TeamPlan[][];
  /** Teams that go: they switch first, giving up their slugs. */
  removedTeams: RemovedTeamPlan[];
  tokens: TokenPlan;
  users: UserPlan;
  problems: PlanProblem[];
}

/** Teams one user may be a member of (docs/contract.md, section 7). */
export const TEAMS_PER_USER = 1_000;

/** Whether the plan writes nothing at all. */
export function isEmpty(plan: Plan): boolean {
  const { teams, removedTeams, tokens, users } = plan;
  const writesTokens =
    tokens.created.length + tokens.removed.length + tokens.indexed.length > 0 || tokens.kept.some(tokenChanges);
  const writesUsers = users.written.length + users.teamsAsSet.length + users.removed.length > 0;
  return teams.length === 0 && removedTeams.length === 0 && !writesTokens && !writesUsers;
}

/** The lists a team's plan writes new generations of. */
export const listsWritten = (team: TeamPlan): ListResource[] => LIST_RESOURCES.filter((part) => team.changes.has(part));

/** Step 1: reads what the plan depends on, and compares. Nothing is written. */
export async function readPlan(t: TableRef, desired: DesiredState, options: PlanOptions): Promise<Plan> {
  const get = (keys: { pk: string; sk: string }[]) => getItems(t.doc, t.tableName, keys, { consistent: true });
  const problems: PlanProblem[] = [];
  const removedIds = new Set(desired.removedTeams ?? []);
  const desiredIds = new Set(desired.teams.map((team) => team.identity.id));

  const headItems = await get([...desiredIds, ...removedIds].map(teamHeadKey));
  const heads = new Map(headItems.map((item) => [Number(item.team_id), readHead(item)]));
  const slugHolders = new Map(
    (await get(desired.teams.map((team) => teamHeadKey(team.identity.slug)))).map((item) => [
      String(item.slug),
      Number(item.team_id),
    ]),
  );
  for (const team of desired.teams) {
    const holder = slugHolders.get(team.identity.slug);
    const movesAway = holder !== undefined && (removedIds.has(holder) || desiredIds.has(holder));
    if (holder !== undefined && holder !== team.identity.id && !movesAway) {
      problems.push({ kind: 'slugTaken', team, holder });
    }
  }

  const teams: TeamPlan[] = [];
  for (const team of desired.teams) {
    const plan = planTeam(team, heads.get(team.identity.id), options.startedAt);
    if (plan.changes.size > 0) teams.push(plan);
  }
  await readMembers(t, teams);
  const keptFinance = teams.filter((team) => team.changes.has('identity') && !team.desired.finance && team.stored);
  const financeItems = await get(keptFinance.map((team) => teamFinanceKey(team.desired.identity.id)));
  for (const team of keptFinance) {
    const item = financeItems.find((i) => Number(i.team_id) === team.desired.identity.id);
    team.keptFinanceJson = item ? String(item.finance) : undefined;
  }

  const removedTeams: RemovedTeamPlan[] = [];
  for (const id of removedIds) {
    const stored = heads.get(id);
    if (!stored) continue;
    const members = await queryAll(t.doc, t.tableName, memberPartition(id, stored.membersGeneration), {
      keysOnly: true,
    });
    removedTeams.push({ stored, leaving: members.map(memberUserIdOf) });
  }

  const users = await planUsers(t, desired, teams, removedTeams, problems);
  const tokens = await planTokens(t, desired, options, problems);
  const { ordered, together } = orderForSlugMoves(teams, problems, options.slugCycles ?? 'refuse');
  return {
    startedAt: options.startedAt,
    teams: [...ordered, ...together.flat()],
    together,
    removedTeams,
    tokens,
    users,
    problems,
  };
}

/** What changes in one team, and the head it switches to. */
function planTeam(desired: DesiredTeam, stored: HeadState | undefined, startedAt: number): TeamPlan {
  const changes = new Set<TeamPart>();
  const { identity } = desired;
  if (!stored || stored.identity.slug !== identity.slug || stored.identity.name !== identity.name) {
    changes.add('identity');
  }
  const list = (part: ListResource) => {
    const wanted = desired[part];
    const kept = stored?.[part];
    if (!wanted) {
      if (!kept) throw new Error(`team ${identity.id} is not in the table, and its ${part} are not given`);
      return kept;
    }
    if (kept && kept.fingerprint === wanted.fingerprint && kept.count === wanted.count) return kept;
    changes.add(part);
    return { generation: newGenerationId(startedAt), ...wanted };
  };
  const projects = list('projects');
  const daemons = list('daemons');
  const financeFingerprint = desired.finance?.fingerprint ?? stored?.financeFingerprint ?? '';
  if (!stored || financeFingerprint !== stored.financeFingerprint) changes.add('finance');
  if (!stored && !desired.finance)
    throw new Error(`team ${identity.id} is not in the table, and its finance is not given`);
  const membersFingerprintWanted = desired.memberIds && membersFingerprint(desired.memberIds);
  if (membersFingerprintWanted !== undefined && membersFingerprintWanted !== stored?.membersFingerprint) {
    changes.add('members');
  }
  const next: HeadState = {
    identity,
    revision: (stored?.revision ?? 0) + 1,
    projects,
    daemons,
    // A team the table does not hold starts a members generation of its own: no entry left on a
    // token by an earlier team of the same id can name it.
    membersGeneration: stored?.membersGeneration ?? newGenerationId(startedAt),
    // The fingerprint of the members is written once they have joined and left (steps.ts).
    membersFingerprint: stored?.membersFingerprint ?? '',
    financeFingerprint,
  };
  return { desired, stored, next, changes, joining: [], leaving: [] };
}

/** Who joins and who leaves, for the teams whose members change: from the member index, not the user items. */
async function readMembers(t: TableRef, teams: TeamPlan[]): Promise<void> {
  for (const team of teams) {
    if (!team.changes.has('members')) continue;
    const wanted = new Set(team.desired.memberIds);
    const stored = team.stored
      ? (
          await queryAll(t.doc, t.tableName, memberPartition(team.desired.identity.id, team.stored.membersGeneration), {
            keysOnly: true,
          })
        ).map(memberUserIdOf)
      : [];
    const had = new Set(stored);
    team.joining = [...wanted].filter((id) => !had.has(id));
    team.leaving = stored.filter((id) => !wanted.has(id));
  }
}

/** Users to write, and the limit on how many teams a user is a member of. */
async function planUsers(
  t: TableRef,
  desired: DesiredState,
  teams: TeamPlan[],
  removedTeams: RemovedTeamPlan[],
  problems: PlanProblem[],
): Promise<UserPlan> {
  const change = new Map<number, number>();
  const count = (ids: number[], by: number) => {
    for (const id of ids) change.set(id, (change.get(id) ?? 0) + by);
  };
  for (const team of teams) {
    count(team.joining, 1);
    count(team.leaving, -1);
  }
  for (const team of removedTeams) count(team.leaving, -1);
  const removed = desired.removedUsers ?? [];
  const ids = new Set([...desired.users.map((user) => user.id), ...change.keys(), ...removed]);
  const stored = new Map(
    (await getItems(t.doc, t.tableName, [...ids].map(userKey), { consistent: true })).map((item) => [
      Number(String(item.pk).slice('USER#'.length)),
      item,
    ]),
  );
  const teamsOf = (id: number) => [...((stored.get(id)?.teams as Iterable<number> | undefined) ?? [])];
  for (const [id, by] of change) {
    const after = teamsOf(id).length + by;
    if (by > 0 && after > TEAMS_PER_USER)
      problems.push({ kind: 'tooManyTeams', userId: id, teams: after, limit: TEAMS_PER_USER });
  }
  return {
    written: desired.users.filter((user) => {
      const item = stored.get(user.id);
      return !item || item.name !== user.name;
    }),
    teamsAsSet: [...stored.entries()]
      .filter(([, item]) => Array.isArray(item.teams) && item.teams.length > 0)
      .map(([id, item]) => ({ id, teams: item.teams as number[] })),
    removed: removed.filter((id) => stored.has(id)),
  };
}

function storedToken(item: Record<string, unknown>): StoredToken {
  return {
    userId: Number(item.user_id),
    abilities: (item.abilities as string[] | undefined) ?? [],
    expiresAt: (item.expires_at as string | null | undefined) ?? null,
    name: item.name as string | undefined,
    sanctumId: item.sanctum_id === undefined ? undefined : Number(item.sanctum_id),
    inactive: item.inactive === true,
  };
}

/** Tokens to create, keep (narrowed and widened) and remove. */
async function planTokens(
  t: TableRef,
  desired: DesiredState,
  options: PlanOptions,
  problems: PlanProblem[],
): Promise<TokenPlan> {
  const get = (keys: { pk: string; sk: string }[]) => getItems(t.doc, t.tableName, keys, { consistent: true });
  const byHash = new Map(
    (await get(desired.tokens.map((token) => tokenKey(token.hash)))).map((item) => [
      String(item.pk),
      storedToken(item),
    ]),
  );
  const sanctumIds = [
    ...desired.tokens.flatMap((token) => (token.sanctumId === undefined ? [] : [token.sanctumId])),
    ...(desired.removedTokens ?? []),
  ];
  const indexItems = new Map(
    (await get(sanctumIds.map(sanctumKey))).map((item) => [
      Number(item.sanctum_id),
      { hash: String(item.hash), fingerprint: String(item.fingerprint) },
    ]),
  );
  const holders = new Map([...indexItems].map(([id, item]) => [id, item.hash]));
  const plan: TokenPlan = { created: [], indexed: [], kept: [], removed: [] };
  const pick = (token: StoredToken) => ({ userId: token.userId, sanctumId: token.sanctumId });
  // The tokens that go (gone from the source, or replaced by another of their Sanctum id): read at
  // once, as many as there are (a mass delete of thousands).
  const going = new Set<string>();
  for (const token of desired.tokens) {
    const holder = token.sanctumId === undefined ? undefined : holders.get(token.sanctumId);
    // Sanctum's id is its primary key: the token that held it before is replaced, and stops working.
    if (holder !== undefined && holder !== token.hash) going.add(holder);
  }
  for (const sanctumId of desired.removedTokens ?? []) {
    const hash = holders.get(sanctumId);
    if (hash !== undefined) going.add(hash);
  }
  for (const item of await get([...going].map(tokenKey))) {
    plan.removed.push({ hash: String(item.pk).slice(TOKEN_PREFIX.length), ...pick(storedToken(item)) });
  }

  for (const token of desired.tokens) {
    const stored = byHash.get(tokenKey(token.hash).pk);
    if (!stored || stored.inactive) {
      plan.created.push(token);
    } else if (stored.userId !== token.userId) {
      if (options.tokenOfAnotherUser === 'refuse')
        problems.push({ kind: 'tokenOfAnotherUser', token, owner: stored.userId });
      else {
        plan.removed.push({ hash: token.hash, ...pick(stored) });
        plan.created.push(token);
      }
    } else {
      plan.kept.push({ desired: token, stored });
    }
    const index = token.sanctumId === undefined ? undefined : indexItems.get(token.sanctumId);
    if (token.sanctumId !== undefined && index?.fingerprint !== tokenFingerprint(token)) plan.indexed.push(token);
  }
  return plan;
}

/**
 * What a token of the source says, as one text: the Sanctum id's item keeps it, so that a sync's full
 * pass compares every token with one Query of that partition instead of a read of each token.
 */
export const tokenFingerprint = (token: DesiredToken): string =>
  textFingerprint(JSON.stringify([token.hash, token.userId, token.name, token.abilities, token.expiresAt]));

/** What a kept token holds once narrowed: the abilities both grant, the earlier expiry. */
export function narrowedToken({ desired, stored }: TokenPlan['kept'][number]) {
  return {
    abilities: commonAbilities(stored.abilities, desired.abilities),
    expiresAt: earlierExpiry(stored.expiresAt, desired.expiresAt),
  };
}

/** Whether the write widens a kept token (after narrowing it): what it grants, its name or its Sanctum id. */
export function widensToken(kept: TokenPlan['kept'][number]): boolean {
  const narrowed = narrowedToken(kept);
  const { desired, stored } = kept;
  return (
    String(desired.abilities) !== String(narrowed.abilities) ||
    desired.expiresAt !== narrowed.expiresAt ||
    desired.name !== stored.name ||
    desired.sanctumId !== stored.sanctumId
  );
}

/** The abilities both lists grant (`*` grants every one). */
function commonAbilities(stored: string[], given: string[]): string[] {
  if (stored.includes('*')) return given;
  if (given.includes('*')) return stored;
  return stored.filter((ability) => given.includes(ability));
}

/** The earlier of two expiries (null: never). */
function earlierExpiry(stored: string | null, given: string | null): string | null {
  if (stored === null || given === null) return stored ?? given;
  return Date.parse(given) < Date.parse(stored) ? given : stored;
}

/** Whether a kept token is written at all: narrowed or widened. */
export function tokenChanges({ desired, stored }: TokenPlan['kept'][number]): boolean {
  return (
    String(desired.abilities) !== String(stored.abilities) ||
    desired.expiresAt !== stored.expiresAt ||
    desired.name !== stored.name ||
    desired.sanctumId !== stored.sanctumId
  );
}

/** Teams split into the groups that the slugs they take from each other tie together. */
function slugGroups(teams: TeamPlan[], holderOf: (team: TeamPlan, among: TeamPlan[]) => TeamPlan | undefined) {
  const groupOf = new Map(teams.map((team) => [team, [team]]));
  for (const team of teams) {
    const holder = holderOf(team, teams);
    const [a, b] = [groupOf.get(team)!, holder && groupOf.get(holder)!];
    if (!b || a === b) continue;
    a.push(...b);
    for (const member of b) groupOf.set(member, a);
  }
  return [...new Set(groupOf.values())];
}

/**
 * Rights taken away before rights granted (docs/contract.md, section 9): of the teams free to switch,
 * those whose members only leave go first, those whose members only join last, so that a user
 * moved from one team to another never reads both.
 */
function membersOrder(team: TeamPlan): number {
  const leaving = team.leaving.length > 0;
  const joining = team.joining.length > 0;
  return leaving && !joining ? 0 : !leaving && !joining ? 1 : leaving ? 2 : 3;
}

/** Teams switched together in one transaction at most (each adds up to 11 actions of its 100). */
export const TEAMS_SWITCHED_TOGETHER = 8;

/**
 * A team may take a slug another team of the same write gives up; that team must switch first. A
 * cycle (two teams swapping slugs) cannot be ordered: refused, it is a problem naming both;
 * `together`, the teams left (the cycle, and any waiting on it) switch last in one transaction.
 */
function orderForSlugMoves(
  teams: TeamPlan[],
  problems: PlanProblem[],
  cycles: 'refuse' | 'together',
): { ordered: TeamPlan[]; together: TeamPlan[][] } {
  const holderOf = (team: TeamPlan, among: TeamPlan[]) =>
    among.find(
      (other) =>
        other !== team &&
        other.stored?.identity.slug === team.desired.identity.slug &&
        other.desired.identity.slug !== team.desired.identity.slug,
    );
  const ordered: TeamPlan[] = [];
  let remaining = [...teams];
  while (remaining.length > 0) {
    const ready = remaining.filter((team) => !holderOf(team, remaining));
    if (ready.length === 0) {
      // The teams left hold each other's slugs: each group of them, tied by the slugs they hand on,
      // switches in one transaction (five pairs swapping are five groups).
      const groups = cycles === 'together' ? slugGroups(remaining, holderOf) : [remaining];
      const together = groups.filter((group) => cycles === 'together' && group.length <= TEAMS_SWITCHED_TOGETHER);
      for (const team of groups.filter((group) => !together.includes(group)).flat()) {
        problems.push({ kind: 'slugCycle', team: team.desired, holder: holderOf(team, remaining)!.desired });
      }
      return { ordered, together };
    }
    ordered.push(...ready.sort((a, b) => membersOrder(a) - membersOrder(b)));
    remaining = remaining.filter((team) => !ready.includes(team));
  }
  return { ordered, together: [] };
}
