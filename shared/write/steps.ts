import { TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { forEachConcurrently } from './concurrently.ts';
import type { ListResource } from '../table/keys.ts';
import {
  type Key,
  pendingKey,
  pendingTokenKey,
  sanctumKey,
  teamFinanceKey,
  teamHeadKey,
  teamListKey,
  tokenKey,
  userKey,
  userTokenKey,
} from '../table/keys.ts';
import { financeItem, headItem, pendingItem, resourceItem, retiredItem, teamListItem } from './items.ts';
import { LockLost } from './lease.ts';
import { joinTeam, leaveTeam, tagTokenMemberships } from './memberships.ts';
import { membersFingerprint } from './fingerprint.ts';
import {
  type DesiredToken,
  listsWritten,
  type Plan,
  type RemovedTeamPlan,
  type TeamPlan,
  narrowedToken,
  tokenFingerprint,
  widensToken,
} from './plan.ts';
import { clearDeadWriters, sweepRetired } from './retention.ts';
import { deleteRequest, putRequest, requestWriter, sendChecked, type Writer, writeRequests } from './writer.ts';

/**
 * A write of the table in five steps over one plan (docs/contract.md, sections 7 and 9;
 * docs/storage.md), under the writers' lock (shared/write/lease.ts). An import and a sync run the
 * same steps; only where the desired state and the items come from differs.
 *
 * 1. Read the plan (plan.ts): what each team, user and token should be against what the table
 *    holds; whatever would not change is left out.
 * 2. Clear what dead writers left (retention.ts); remove the tokens that go and narrow the ones
 *    that lose abilities or expire earlier: in force before any team switches.
 * 3. Write beside what readers use: new users' items, new tokens (inactive), and a new generation
 *    of each list that changes (reserved in the ledger first, so whatever a killed writer wrote,
 *    the next one finds).
 * 4. Switch each team, one transaction each, on condition that its head is still at the revision
 *    the plan read and that the lock is still held: members who leave lose the team just before,
 *    members who join gain it just after; teams whose members only leave switch first.
 * 5. Widen and activate the tokens, and sweep what retention allows.
 */

/** Thrown by step 3 when the items given for a list are not the ones the plan counted. */
export class ItemsChanged extends Error {
  constructor(detail: string) {
    super(detail);
    this.name = 'ItemsChanged';
  }
}

/** Thrown by step 4 when a team's head moved while it was written: nothing of that team switched. */
export class TeamChanged extends Error {
  readonly teamId: number;
  constructor(teamId: number, cause: unknown) {
    super(
      `team ${teamId} changed while it was being written (a writer that does not take the lock ran at the same time)`,
      {
        cause,
      },
    );
    this.name = 'TeamChanged';
    this.teamId = teamId;
  }
}

/** Hands one item of a list to step 3: its team, its list, its ordinal (1-based, in id order) and its JSON. */
export type EmitItem = (teamId: number, list: ListResource, ordinal: number, json: string) => void | Promise<void>;

export interface StepHooks {
  /** Called as the write goes; an async observer is awaited (the write waits for it). */
  onProgress?: (progress: { phase: 'writing' | 'switching'; done: number; total: number }) => void | Promise<void>;
}

/** Steps 2 to 5. `items` hands every item of every list that the plan writes (and may hand more: they are skipped). */
export async function applyPlan(
  w: Writer,
  plan: Plan,
  items: (emit: EmitItem) => Promise<void>,
  hooks: StepHooks = {},
): Promise<{ itemsWritten: number }> {
  await narrowFirst(w, plan);
  const itemsWritten = await writeBeside(w, plan, items, hooks);
  await switchTeams(w, plan, hooks);
  await widenLast(w, plan);
  return { itemsWritten };
}

// ---- 2. What dead writers left; tokens narrowed first -------------------------------------------

export async function narrowFirst(w: Writer, plan: Plan): Promise<void> {
  await clearDeadWriters(w);
  const { removed, kept, indexed } = plan.tokens;
  const reindexed = new Set(indexed.map((token) => token.sanctumId));
  // The tokens first, which is what revokes them (thousands, in a mass delete), then their indexes.
  await writeRequests(
    w,
    removed.map((token) => deleteRequest(tokenKey(token.hash))),
  );
  await writeRequests(
    w,
    removed.flatMap((token) => [
      deleteRequest(userTokenKey(token.userId, token.hash)),
      // Its Sanctum id's item goes with it, unless a token of this write takes the id over.
      ...(token.sanctumId !== undefined && !reindexed.has(token.sanctumId)
        ? [deleteRequest(sanctumKey(token.sanctumId))]
        : []),
    ]),
  );
  await forEachConcurrently(kept, async ({ desired, stored }) => {
    const { abilities, expiresAt } = narrowedToken({ desired, stored });
    if (String(abilities) !== String(stored.abilities) || expiresAt !== stored.expiresAt) {
      await updateToken(w, desired.hash, desired.userId, { abilities, expires_at: expiresAt });
    }
  });
}

// ---- 3. Beside what readers use --------------------------------------------------------------

async function writeBeside(
  w: Writer,
  plan: Plan,
  items: (emit: EmitItem) => Promise<void>,
  { onProgress }: StepHooks,
): Promise<number> {
  const { startedAt, teams, tokens, users } = plan;
  await writeRequests(w, [
    ...teams.flatMap((team) =>
      listsWritten(team).map((list) =>
        putRequest(pendingItem(team.desired.identity.id, team.next[list].generation, list, startedAt)),
      ),
    ),
    ...tokens.created.map((token) => putRequest({ ...pendingTokenKey(token.hash), user_id: token.userId })),
  ]);
  await writeRequests(w, [
    ...tokens.created.flatMap((token) => [
      putRequest({
        ...tokenKey(token.hash),
        user_id: token.userId,
        abilities: token.abilities,
        expires_at: token.expiresAt,
        ...(token.name !== undefined && { name: token.name }),
        ...(token.sanctumId !== undefined && { sanctum_id: token.sanctumId }),
        created_at: new Date(startedAt).toISOString(),
        inactive: true,
      }),
      putRequest(userTokenKey(token.userId, token.hash)),
    ]),
  ]);
  await forEachConcurrently(users.teamsAsSet, ({ id, teams }) => setUser(w, id, { teams: new Set(teams) }));
  await forEachConcurrently(users.written, ({ id, name }) => setUser(w, id, { name }));
  return writeLists(w, plan, items, onProgress);
}

/** Every item of the lists that change, numbered as their ordinals, then checked against the plan's counts. */
async function writeLists(
  w: Writer,
  plan: Plan,
  items: (emit: EmitItem) => Promise<void>,
  onProgress: StepHooks['onProgress'],
): Promise<number> {
  const written = new Map<string, { generation: string; expected: number; count: number }>();
  for (const team of plan.teams) {
    for (const list of listsWritten(team)) {
      const { generation, count } = team.next[list];
      written.set(`${team.desired.identity.id}#${list}`, { generation, expected: count, count: 0 });
    }
  }
  const total = [...written.values()].reduce((n, part) => n + part.expected, 0);
  if (total === 0) return 0;
  let done = 0;
  await onProgress?.({ phase: 'writing', done, total });
  const writer = requestWriter(w, (count) => onProgress?.({ phase: 'writing', done: (done += count), total }));
  await items((teamId, list, ordinal, json) => {
    const part = written.get(`${teamId}#${list}`);
    if (!part) return;
    if (ordinal < 1 || ordinal > part.expected) throw new ItemsChanged(`team ${teamId}: ${list} ordinal ${ordinal}`);
    part.count += 1;
    return writer.add(putRequest(resourceItem(teamId, part.generation, list, ordinal, json)));
  });
  await writer.flush();
  for (const [name, part] of written) {
    if (part.count !== part.expected) {
      throw new ItemsChanged(`team ${name.replace('#', ': ')}: ${part.count} items instead of ${part.expected}`);
    }
  }
  return writer.written;
}

// ---- 4. The switch -------------------------------------------------------------------------------

async function switchTeams(w: Writer, plan: Plan, { onProgress }: StepHooks): Promise<void> {
  const total = plan.removedTeams.length + plan.teams.length;
  let done = 0;
  for (const team of plan.removedTeams) {
    await removeTeam(w, team);
    await onProgress?.({ phase: 'switching', done: ++done, total });
  }
  // What switches together: a team, or teams that swap slugs (plan.ts), in the plan's order.
  const grouped = new Set(plan.together.flat());
  const units = [...plan.teams.filter((team) => !grouped.has(team)).map((team) => [team]), ...plan.together];
  // Each team: its leaving members lose it just before its switch, its joining members gain it just
  // after (plan.ts puts teams whose members only leave first). Where the slugs' order makes a team
  // that a user joins switch before one she leaves, she leaves that one before any switch: a right
  // taken away is in force no later than one granted (docs/contract.md, section 9).
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
  for (const [team, users] of early) await leaveTeam(w, team.desired.identity.id, team.next.membersGeneration, users);
  for (const unit of units) {
    for (const team of unit) await membersLeave(w, team, early.get(team) ?? []);
    const [first] = unit;
    if (unit.length > 1) await transact(w, first!.desired.identity.id, switchedTogether(w, unit));
    else if (!onlyMembers(first!)) await transact(w, first!.desired.identity.id, switchActions(w, first!, unit));
    for (const team of unit) await membersJoin(w, team);
    done += unit.length;
    await onProgress?.({ phase: 'switching', done, total });
  }
}

/**
 * Teams that swap slugs, in one transaction: each team's actions, where one team's slug copy that
 * another takes over is that team's put alone (a transaction names an item once), on condition that
 * it is held by one of these teams.
 */
function switchedTogether(w: Writer, teams: TeamPlan[]): TransactAction[] {
  const byKey = new Map<string, TransactAction>();
  for (const team of teams.filter((t) => !onlyMembers(t))) {
    for (const action of switchActions(w, team, teams)) {
      const { Key, Item } = (action.Put ?? action.Delete) as { Key?: Key; Item?: Key };
      const key = JSON.stringify([(Key ?? Item)!.pk, (Key ?? Item)!.sk]);
      if (!byKey.has(key) || action.Put) byKey.set(key, action);
    }
  }
  return [...byKey.values()];
}

type TransactAction = { Put?: { Item: Key }; Delete?: { Key: Key } } & Record<string, unknown>;

/** Sends the switch of one team, the lock's check first (so that its cancellation reason is the first). */
async function transact(w: Writer, teamId: number, actions: TransactAction[]): Promise<void> {
  w.lock.assertHeld();
  try {
    await w.doc.send(new TransactWriteCommand({ TransactItems: [w.lock.conditionCheck(), ...actions] as never }));
  } catch (error) {
    if ((error as Error).name !== 'TransactionCanceledException') throw error;
    const reasons = (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
    if (reasons?.[0]?.Code === 'ConditionalCheckFailed') throw new LockLost();
    throw new TeamChanged(teamId, error);
  }
}

/**
 * The head as the plan read it: absent (undefined), or at its revision (0: a head written before
 * heads had revisions). Two writers can never both switch from the same revision.
 */
function atRevision(revision: number | undefined): { ConditionExpression: string; ExpressionAttributeValues?: object } {
  if (revision === undefined) return { ConditionExpression: 'attribute_not_exists(pk)' };
  if (revision === 0) return { ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(revision)' };
  return { ConditionExpression: 'revision = :revision', ExpressionAttributeValues: { ':revision': revision } };
}

/**
 * A team's slug copies belong to it: a copy another team holds is never overwritten or removed (but
 * by a team that it swaps slugs with, in the same transaction).
 */
const ownSlug = (teamIds: number[]) => ({
  ConditionExpression: `attribute_not_exists(pk) OR team_id IN (${teamIds.map((_, i) => `:id${i}`).join(', ')})`,
  ExpressionAttributeValues: Object.fromEntries(teamIds.map((id, i) => [`:id${i}`, id])),
});

const put = (w: Writer, Item: Key, condition = {}) => ({ Put: { TableName: w.tableName, Item, ...condition } });
const remove = (w: Writer, Key: Key, condition = {}) => ({ Delete: { TableName: w.tableName, Key, ...condition } });

const onlyMembers = ({ changes }: TeamPlan) => changes.size === 1 && changes.has('members');

/** The actions of the transaction that switches a team's head (`owners`: the teams its slug copies may be held by). */
function switchActions(w: Writer, team: TeamPlan, owners: TeamPlan[]): TransactAction[] {
  const { desired, stored, next, changes } = team;
  const id = desired.identity.id;
  const { slug } = desired.identity;
  const slugMoved = stored !== undefined && stored.identity.slug !== slug;
  const financeJson = desired.finance?.json ?? team.keptFinanceJson;
  const writeFinance = (changes.has('finance') || slugMoved) && financeJson !== undefined;
  const finance = (ref: string | number) =>
    financeItem(desired.identity, financeJson!, next.financeFingerprint, ref, next.membersGeneration);
  const now = w.clock();
  const own = ownSlug(owners.map((owner) => owner.desired.identity.id));
  return [
    put(w, headItem(id, next), atRevision(stored?.revision)),
    put(w, headItem(slug, next), own),
    ...(writeFinance ? [put(w, finance(id)), put(w, finance(slug), own)] : []),
    ...listsWritten(team).flatMap((list) => [
      remove(w, pendingKey(id, next[list].generation, list)),
      ...(stored ? [put(w, retiredItem(id, stored[list].generation, list, now))] : []),
    ]),
    ...(slugMoved
      ? [remove(w, teamHeadKey(stored.identity.slug), own), remove(w, teamFinanceKey(stored.identity.slug), own)]
      : []),
    ...(stored ? [] : [put(w, teamListItem(id))]),
  ];
}

/** Before its switch: members who leave the team. */
async function membersLeave(w: Writer, team: TeamPlan, leftAlready: number[]): Promise<void> {
  const leaving = team.leaving.filter((userId) => !leftAlready.includes(userId));
  if (leaving.length > 0) await leaveTeam(w, team.desired.identity.id, team.next.membersGeneration, leaving);
}

/** After its switch: members who join, then the members' fingerprint. */
async function membersJoin(w: Writer, team: TeamPlan): Promise<void> {
  const { desired, stored, next, changes } = team;
  const id = desired.identity.id;
  if (team.joining.length > 0) await joinTeam(w, id, next.membersGeneration, team.joining);
  if (changes.has('members')) {
    const revision = onlyMembers(team) ? stored!.revision : next.revision;
    await recordMembers(w, id, membersFingerprint(desired.memberIds!), revision);
  }
}

/**
 * Once every member has joined and left: the members' fingerprint on the head, so that the next
 * write finds nothing to do. Written last, so that a writer killed before it leaves the members
 * still to compare, and the next one completes them.
 */
async function recordMembers(w: Writer, teamId: number, fingerprint: string, revision: number): Promise<void> {
  const condition = atRevision(revision);
  try {
    await sendChecked(
      w,
      new UpdateCommand({
        TableName: w.tableName,
        Key: teamHeadKey(teamId),
        UpdateExpression: 'SET members_fingerprint = :fingerprint',
        ConditionExpression: condition.ConditionExpression,
        ExpressionAttributeValues: { ':fingerprint': fingerprint, ...condition.ExpressionAttributeValues },
      }),
    );
  } catch (error) {
    if ((error as Error).name === 'ConditionalCheckFailedException') throw new TeamChanged(teamId, error);
    throw error;
  }
}

/** A removed team: its members lose it, then its heads, finance copies and list entry go; its generations retire. */
async function removeTeam(w: Writer, { stored, leaving }: RemovedTeamPlan): Promise<void> {
  const { id, slug } = stored.identity;
  await leaveTeam(w, id, stored.membersGeneration, leaving);
  const now = w.clock();
  await transact(w, id, [
    remove(w, teamHeadKey(id), atRevision(stored.revision)),
    remove(w, teamHeadKey(slug), ownSlug([id])),
    remove(w, teamFinanceKey(id)),
    remove(w, teamFinanceKey(slug), ownSlug([id])),
    remove(w, teamListKey(id)),
    put(w, retiredItem(id, stored.projects.generation, 'projects', now)),
    put(w, retiredItem(id, stored.daemons.generation, 'daemons', now)),
    put(w, retiredItem(id, stored.membersGeneration, 'MEMBER', now)),
  ]);
}

// ---- 5. Tokens widened last; retention -------------------------------------------------------------

export async function widenLast(w: Writer, plan: Plan): Promise<void> {
  const { created, kept } = plan.tokens;
  await writeRequests(
    w,
    plan.users.removed.map((id) => deleteRequest(userKey(id))),
  );
  // New tokens get their memberships while still inactive (a user's tokens together), then become valid.
  const byUser = Map.groupBy(created, (token) => token.userId);
  await forEachConcurrently([...byUser], async ([userId, tokens]) => {
    w.lock.assertHeld();
    await tagTokenMemberships(w, userId, ...tokens.map((token) => token.hash));
    await forEachConcurrently(tokens, (token) => updateToken(w, token.hash, token.userId, widened(token)));
  });
  await forEachConcurrently(kept.filter(widensToken), ({ desired }) =>
    updateToken(w, desired.hash, desired.userId, widened(desired)),
  );
  await writeRequests(w, [
    ...plan.tokens.indexed.map((token) =>
      putRequest({
        ...sanctumKey(token.sanctumId!),
        sanctum_id: token.sanctumId,
        hash: token.hash,
        user_id: token.userId,
        fingerprint: tokenFingerprint(token),
      }),
    ),
    ...created.map((token) => deleteRequest(pendingTokenKey(token.hash))),
  ]);
  try {
    await sweepRetired(w, w.clock());
  } catch (error) {
    // Everything is written by now: what is left to remove, the next write removes.
    w.log(
      `the write is complete, but removing replaced generations stopped (${(error as Error).message}); ` +
        'the next write will finish it',
    );
  }
}

/** A token as the write says (abilities, expiry, name, Sanctum id), and valid. A revocation stays. */
function widened(token: DesiredToken) {
  return {
    abilities: token.abilities,
    expires_at: token.expiresAt,
    name: token.name,
    sanctum_id: token.sanctumId,
    inactive: undefined,
  };
}

/** Sets the attributes given, removes those given as undefined: on condition that the token is still its user's. */
async function updateToken(w: Writer, hash: string, userId: number, attributes: Record<string, unknown>) {
  const names = Object.keys(attributes);
  const set = names.filter((name) => attributes[name] !== undefined);
  const removed = names.filter((name) => attributes[name] === undefined);
  const setClause = `SET ${set.map((name) => `#${name} = :${name}`).join(', ')}`;
  const removeClause = removed.length > 0 ? ` REMOVE ${removed.map((name) => `#${name}`).join(', ')}` : '';
  await sendChecked(
    w,
    new UpdateCommand({
      TableName: w.tableName,
      Key: tokenKey(hash),
      UpdateExpression: setClause + removeClause,
      ConditionExpression: 'user_id = :user',
      ExpressionAttributeNames: Object.fromEntries(names.map((name) => [`#${name}`, name])),
      ExpressionAttributeValues: {
        ...Object.fromEntries(set.map((name) => [`:${name}`, attributes[name]])),
        ':user': userId,
      },
    }),
  );
}

/** A user item's attributes, set (the rest of the item stays). */
async function setUser(w: Writer, userId: number, attributes: Record<string, unknown>): Promise<void> {
  const names = Object.keys(attributes).filter((name) => attributes[name] !== undefined);
  const removed = Object.keys(attributes).filter((name) => attributes[name] === undefined);
  const clauses = [
    ...(names.length > 0 ? [`SET ${names.map((name) => `#${name} = :${name}`).join(', ')}`] : []),
    ...(removed.length > 0 ? [`REMOVE ${removed.map((name) => `#${name}`).join(', ')}`] : []),
  ];
  await sendChecked(
    w,
    new UpdateCommand({
      TableName: w.tableName,
      Key: userKey(userId),
      UpdateExpression: clauses.join(' '),
      ExpressionAttributeNames: Object.fromEntries(Object.keys(attributes).map((name) => [`#${name}`, name])),
      ...(names.length > 0 && {
        ExpressionAttributeValues: Object.fromEntries(names.map((name) => [`:${name}`, attributes[name]])),
      }),
    }),
  );
}
