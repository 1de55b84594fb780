import { stat } from 'node:fs/promises';
import { TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { daemonJson, projectJson, type Daemon, type Project } from '../store/resources.ts';
import {
  membershipEntry,
  pendingKey,
  pendingTokenKey,
  teamFinanceKey,
  teamHeadKey,
  tokenKey,
  userIdOf,
  userKey,
  userTokenKey,
  type Key,
} from '../../shared/store/keys.ts';
import { getItems } from '../store/batch-get.ts';
import { batchWriter, writeAll, type WriteRequest } from '../store/batch-write.ts';
import { forEachConcurrently } from '../store/concurrently.ts';
import { changeUsersMemberships, listUserTokens } from '../store/memberships.ts';
import { financeFieldsJson } from './finance.ts';
import { ordinalOf } from './id-list.ts';
import { readSnapshotRecords } from './json-records.ts';
import { acquireImportLock, LockLost, type ImportLock, type LockOptions } from './lock.ts';
import { locate, Problems, say } from './problems.ts';
import { importRetention } from './retention.ts';
import { LIMITS } from './snapshot.ts';
import { toUtcTimestamp } from './timestamp.ts';
import {
  financeItem,
  headItem,
  memberItem,
  newGenerationId,
  pendingItem,
  resourceItem,
  retiredItem,
} from './stored-items.ts';
import type { SnapshotTeam, SnapshotToken, SnapshotUser, ValidSnapshot } from './validation.ts';

/**
 * Pass 2 of an import (docs/contract.md, section 7; docs/storage.md). Each team of the snapshot is
 * written as a new generation beside the one readers use, its members included, then switched to
 * in one transaction with its finance summary. In order, under the table's import lock (lock.ts):
 *
 * 1. Read what the import depends on; anything the table makes impossible (a slug another team
 *    holds, a slug swap, a token of another user, a user past 1,000 teams) rejects it here.
 * 2. Clear what killed imports left (retention.ts), then narrow the snapshot's existing tokens
 *    (earlier expiry, fewer abilities): in force before any team switches.
 * 3. Write each new generation: member index, new tokens (inactive), every project and daemon
 *    (read again from the file, whose fingerprint must not have changed). Users then list old and
 *    new teams, and every token of every member gets the entry `<team>#<generation>`, listed once,
 *    just before the first switch (a token created after that listing finds the pending
 *    generations and their member index itself: commands/tokens/tokens.ts).
 * 4. Switch the teams, one transaction each, on condition that the head still names the
 *    generation this import started from and that the lock is still ours.
 * 5. Remove the replaced generations' entries, write users as the snapshot says, widen and
 *    activate the snapshot's tokens, and sweep what retention allows.
 */

export interface ImportProgress {
  phase: 'writing' | 'switching';
  done: number;
  total: number;
}

export interface ImportOptions {
  /** Called as the import goes; an async observer is awaited (the import waits for it). */
  onProgress?: (progress: ImportProgress) => void | Promise<void>;
  /** One line per event worth a line (waiting for a lock, a sweep that stopped). */
  log?: (line: string) => void;
  /** Wall-clock milliseconds: retention is measured with it. */
  clock?: () => number;
  lock?: Pick<LockOptions, 'leaseMs' | 'renewEveryMs'>;
}

/** Thrown before anything is written when the table itself makes the snapshot unusable. */
export class ImportRejected extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ImportRejected';
    this.problems = problems;
  }
}

/** The file is not the one validated any more: nothing was switched. */
class SnapshotChanged extends Error {
  constructor(detail: string) {
    super(`the snapshot file changed after it was validated (${detail}); no team was switched: run the import again`);
    this.name = 'SnapshotChanged';
  }
}

interface HeadItem {
  team_id: number;
  slug: string;
  generation: string;
}

interface TokenItem {
  user_id: number;
  abilities: string[];
  expires_at: string | null;
  inactive?: boolean;
}

export async function importSnapshot(
  doc: DynamoDBDocumentClient,
  tableName: string,
  snapshot: ValidSnapshot,
  options: ImportOptions = {},
) {
  await assertUnchanged(snapshot);
  const lock = await acquireImportLock(doc, tableName, { ...options.lock, onWait: options.log });
  try {
    await runImport(doc, tableName, snapshot, lock, options);
  } catch (error) {
    // The import's own failure is the one to report; a lock not released expires by itself.
    await lock.release().catch(() => {});
    throw error;
  }
  await lock.release();
  return {
    teams: snapshot.teams.length,
    items: snapshot.items,
    users: snapshot.users.length,
    tokens: snapshot.tokens.length,
  };
}

async function runImport(
  doc: DynamoDBDocumentClient,
  tableName: string,
  snapshot: ValidSnapshot,
  lock: ImportLock,
  options: ImportOptions,
): Promise<void> {
  const { teams, users, tokens } = snapshot;
  const clock = options.clock ?? Date.now;
  const startedAt = clock();
  const teamsById = new Map(teams.map((team) => [team.id, team]));
  const generations = new Map(teams.map((team) => [team.id, newGenerationId(startedAt)]));
  /** Each member of a snapshot team, with the entries `<team>#<generation>` of the new generations of its teams. */
  const memberEntries = new Map<number, string[]>();
  for (const team of teams) {
    const entry = membershipEntry(team.id, generations.get(team.id)!);
    for (const userId of team.memberIds) memberEntries.set(userId, [...(memberEntries.get(userId) ?? []), entry]);
  }
  /** Snapshot tokens not in the table, or left inactive by a killed import: written inactive, activated last. */
  const newTokens: SnapshotToken[] = [];
  /** Snapshot tokens already in the table, as stored. */
  const storedTokens = new Map<SnapshotToken, TokenItem>();
  /** The teams each snapshot user lists in the table now. */
  const listedTeams = new Map<number, number[]>();
  /** The new tokens, written with the new generations' entries already. */
  const tagged = new Set<string>();
  const beforeWrite = () => lock.assertHeld();
  const write = (requests: WriteRequest[]) => writeAll(doc, tableName, requests, { beforeSend: beforeWrite });
  const putRequest = (item: object): WriteRequest => ({ PutRequest: { Item: item as Record<string, unknown> } });
  const get = async <T>(keys: Key[]) => (await getItems(doc, tableName, keys, { consistent: true })) as T[];
  const retention = importRetention(doc, tableName, beforeWrite);

  const { heads, switchOrder } = await readTable();
  await retention.clearDeadImports();
  await narrowTokens();
  await writeGenerations();
  await writeUsers('during');
  await tagMembersTokens();
  let switched = 0;
  for (const team of switchOrder) {
    await switchTeam(team, heads.get(team.id));
    await options.onProgress?.({ phase: 'switching', done: ++switched, total: switchOrder.length });
  }
  await retention.removeReplacedEntries();
  await writeUsers('after');
  await widenTokens();
  try {
    await retention.sweepRetired(clock());
  } catch (error) {
    // Every team is imported by now: what is left to remove, the next import removes.
    options.log?.(
      `the import is complete, but removing replaced generations stopped (${(error as Error).message}); the next import will finish it`,
    );
  }

  // ---- 1. What the import depends on; rejections before the first write ----------------

  async function readTable() {
    const problems = new Problems();
    const heads = new Map(
      (await get<HeadItem>(teams.map((t) => teamHeadKey(t.id)))).map((item) => [item.team_id, item]),
    );
    const slugHolders = new Map(
      (await get<HeadItem>(teams.map((t) => teamHeadKey(t.slug)))).map((item) => [item.slug, item]),
    );
    for (const team of teams) {
      const holder = slugHolders.get(team.slug);
      if (holder && holder.team_id !== team.id && !teamsById.has(holder.team_id)) {
        problems.add(say.slugTaken(locate('teams', team.index, team.id), team.slug, holder.team_id));
      }
    }
    const switchOrder = orderForSlugMoves(teams, heads, problems);

    const existing = new Map(
      (await get<TokenItem & Key>(tokens.map((t) => tokenKey(t.hash)))).map((item) => [item.pk, item]),
    );
    for (const token of tokens) {
      const stored = existing.get(tokenKey(token.hash).pk);
      // A token a killed import left inactive was never valid: this import takes it over.
      if (!stored || stored.inactive) {
        newTokens.push(token);
        tagged.add(token.hash);
      } else if (stored.user_id !== token.userId)
        problems.add(say.tokenOfAnotherUser(locate('tokens', token.index), stored.user_id));
      else storedTokens.set(token, stored);
    }

    for (const item of await get<Key & { teams?: number[] }>(users.map((u) => userKey(u.id))))
      listedTeams.set(userIdOf(item), item.teams ?? []);
    users.forEach((user, index) => {
      const teamCount = teamsOf(user, 'after').length;
      if (teamCount > LIMITS.teamsPerUser)
        problems.add(say.tooManyTeams(locate('users', index, user.id), teamCount, LIMITS.teamsPerUser));
    });
    if (problems.count > 0) throw new ImportRejected(problems.lines());
    return { heads, switchOrder };
  }

  /**
   * The teams a user lists: the snapshot's, and those outside the snapshot it is in (their
   * membership is unchanged). While the import runs, also those it is leaving, so that a token
   * created meanwhile finds every team it may read.
   */
  function teamsOf(user: SnapshotUser, when: 'during' | 'after'): number[] {
    const listed = listedTeams.get(user.id) ?? [];
    const kept = when === 'during' ? listed : listed.filter((teamId) => !teamsById.has(teamId));
    return [...new Set([...user.teams, ...kept])];
  }

  // ---- 2. Tokens: narrowing first, widening last -----------------------------------------

  /** What the snapshot takes away from an existing token: an earlier expiry, abilities removed. */
  async function narrowTokens() {
    await forEachConcurrently(storedTokens, async ([token, stored]) => {
      const abilities = commonAbilities(stored.abilities, token.abilities);
      const expires_at = earlierExpiry(stored.expires_at, token.expiresAt);
      if (String(abilities) !== String(stored.abilities) || expires_at !== stored.expires_at)
        await updateToken(token, { abilities, expires_at });
    });
  }

  /** The snapshot's tokens as it says (abilities, expiry, name, Sanctum id), and valid: after the last switch. A revocation stays. */
  async function widenTokens() {
    await forEachConcurrently(tokens, (token) =>
      updateToken(token, {
        abilities: token.abilities,
        expires_at: token.expiresAt,
        name: token.name,
        sanctum_id: token.sanctumId,
        inactive: undefined,
      }),
    );
    await write(newTokens.map((token) => ({ DeleteRequest: { Key: pendingTokenKey(token.hash) } })));
  }

  /** Sets the attributes given, removes those given as undefined: on condition that the token is still its user's. */
  async function updateToken(token: SnapshotToken, attributes: Record<string, unknown>) {
    const names = Object.keys(attributes);
    const set = names.filter((name) => attributes[name] !== undefined);
    const removed = names.filter((name) => attributes[name] === undefined);
    lock.assertHeld();
    await doc.send(
      new UpdateCommand({
        TableName: tableName,
        Key: tokenKey(token.hash),
        UpdateExpression: `SET ${set.map((name) => `#${name} = :${name}`).join(', ')}${removed.length > 0 ? ` REMOVE ${removed.map((name) => `#${name}`).join(', ')}` : ''}`,
        ConditionExpression: 'user_id = :user',
        ExpressionAttributeNames: Object.fromEntries(names.map((name) => [`#${name}`, name])),
        ExpressionAttributeValues: {
          ...Object.fromEntries(set.map((name) => [`:${name}`, attributes[name]])),
          ':user': token.userId,
        },
      }),
    );
  }

  // ---- 3. New generations ----------------------------------------------------------------

  async function writeGenerations() {
    // Reserved in the ledger first, as are new tokens: whatever a killed import wrote, the next finds.
    await write([
      ...teams.map((team) => putRequest(pendingItem(team.id, generations.get(team.id)!, startedAt))),
      ...newTokens.map((token) => putRequest({ ...pendingTokenKey(token.hash), user_id: token.userId })),
    ]);
    await write([
      // The member index: whoever removes a generation's entries finds its members through it.
      ...teams.flatMap((team) =>
        team.memberIds.map((userId) => putRequest(memberItem(team.id, generations.get(team.id)!, userId))),
      ),
      ...newTokens.flatMap((token) => {
        const entries = memberEntries.get(token.userId) ?? [];
        const item = {
          ...tokenKey(token.hash),
          user_id: token.userId,
          abilities: token.abilities,
          expires_at: token.expiresAt,
          ...(token.name !== undefined && { name: token.name }),
          ...(token.sanctumId !== undefined && { sanctum_id: token.sanctumId }),
          created_at: new Date(startedAt).toISOString(),
          inactive: true,
          ...(entries.length > 0 && { memberships: new Set(entries) }),
        };
        return [putRequest(item), putRequest(userTokenKey(token.userId, token.hash))];
      }),
    ]);
    await writeItems();
  }

  /** Adds the new generations' entries (added, never set) to each member's tokens but the new ones. */
  async function tagMembersTokens() {
    await changeUsersMemberships(doc, tableName, memberEntries, 'ADD', beforeWrite, async (userId) =>
      (await listUserTokens(doc, tableName, userId)).filter((hash) => !tagged.has(hash)),
    );
  }

  /** Pass 2: every project and daemon, from the file again, numbered by the ids pass 1 sorted. */
  async function writeItems() {
    await assertUnchanged(snapshot);
    const total = snapshot.items;
    let done = 0;
    await options.onProgress?.({ phase: 'writing', done, total });
    const writer = batchWriter(doc, tableName, {
      beforeSend: beforeWrite,
      onWritten: (count) => options.onProgress?.({ phase: 'writing', done: (done += count), total }),
    });
    // Pass 1 checked every record of this file; its fingerprint is checked again below, before
    // any switch. So records are taken as they are here: a file changed meanwhile can only
    // leave garbage in a generation that is never switched to (and is swept).
    const read = await readSnapshotRecords(
      snapshot.path,
      (collection, _index, fields) => {
        if (collection !== 'projects' && collection !== 'daemons') return undefined;
        const project = collection === 'projects';
        const team = teamsById.get(
          (project ? fields.team_id : snapshot.environmentTeams.get(fields.environment_id as number)) as number,
        );
        const ordinal = team ? ordinalOf(project ? team.projectIds : team.daemonIds, fields.id as number) : 0;
        const createdAt = project ? toUtcTimestamp(String(fields.created_at)) : '';
        if (!team || ordinal === 0 || createdAt === undefined)
          throw new SnapshotChanged(`one of its ${collection} was not validated`);
        const json = project
          ? projectJson({
              ...(fields as unknown as Project),
              client_id: (fields.client_id ?? null) as number | null,
              created_at: createdAt,
            })
          : daemonJson(fields as unknown as Daemon);
        return writer.add(putRequest(resourceItem(team.id, generations.get(team.id)!, collection, ordinal, json)));
      },
      new Problems(),
    );
    await writer.flush();
    if (!read.readable || read.sha256 !== snapshot.sha256) throw new SnapshotChanged('its SHA-256 differs');
    if (writer.written !== total) throw new SnapshotChanged(`${writer.written} items instead of ${total}`);
  }

  /** Users as the snapshot says, listing their teams (teamsOf). */
  async function writeUsers(when: 'during' | 'after') {
    await write(
      users.map((user) =>
        putRequest({
          ...userKey(user.id),
          ...(user.name !== undefined && { name: user.name }),
          teams: teamsOf(user, when),
        }),
      ),
    );
  }

  // ---- 4. The switch ------------------------------------------------------------------------

  async function switchTeam(team: SnapshotTeam, old: HeadItem | undefined) {
    const generation = generations.get(team.id)!;
    const counts = { projects: team.projectIds.length, daemons: team.daemonIds.length };
    const fieldsJson = financeFieldsJson(team.finance);
    const put = (Item: object, condition = {}) => ({ Put: { TableName: tableName, Item, ...condition } });
    const remove = (Key: Key, condition = {}) => ({ Delete: { TableName: tableName, Key, ...condition } });
    const ifOwnSlug = {
      ConditionExpression: 'attribute_not_exists(pk) OR team_id = :id',
      ExpressionAttributeValues: { ':id': team.id },
    };
    // Two imports cannot interleave: the head must still name the generation this one read.
    const ifStartedFrom = old
      ? { ConditionExpression: 'generation = :old', ExpressionAttributeValues: { ':old': old.generation } }
      : { ConditionExpression: 'attribute_not_exists(pk)' };
    const actions = [
      lock.conditionCheck(), // first, so that its cancellation reason is the first
      put(headItem(team, team.id, generation, counts), ifStartedFrom),
      put(headItem(team, team.slug, generation, counts), ifOwnSlug),
      put(financeItem(team, fieldsJson, team.id, generation)),
      put(financeItem(team, fieldsJson, team.slug, generation), ifOwnSlug),
      remove(pendingKey(team.id, generation)),
      ...(old ? [put(retiredItem(team.id, old.generation, clock()))] : []),
      ...(old && old.slug !== team.slug
        ? [remove(teamHeadKey(old.slug), ifOwnSlug), remove(teamFinanceKey(old.slug), ifOwnSlug)]
        : []),
    ];
    lock.assertHeld();
    try {
      await doc.send(new TransactWriteCommand({ TransactItems: actions as never }));
    } catch (error) {
      if ((error as Error).name !== 'TransactionCanceledException') throw error;
      const reasons = (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
      if (reasons?.[0]?.Code === 'ConditionalCheckFailed') throw new LockLost();
      throw new Error(
        `team ${team.id} changed while it was being imported (an import that does not take the lock ran at the same time); nothing of this team was switched: run the import again`,
        { cause: error },
      );
    }
  }
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

/** The file must still be the one pass 1 validated (its fingerprint is checked again in pass 2). */
async function assertUnchanged(snapshot: ValidSnapshot): Promise<void> {
  const { size, mtimeMs } = await stat(snapshot.path);
  if (size !== snapshot.bytes || mtimeMs !== snapshot.modifiedMs)
    throw new SnapshotChanged('its size or modification time differs');
}

/**
 * A team may take a slug another team of the same snapshot gives up; that team must switch
 * first. A cycle (two teams swapping slugs) cannot be ordered and is rejected, naming both.
 */
function orderForSlugMoves(teams: SnapshotTeam[], heads: Map<number, HeadItem>, problems: Problems): SnapshotTeam[] {
  const holderOf = (team: SnapshotTeam, among: SnapshotTeam[]) =>
    among.find((other) => other !== team && heads.get(other.id)?.slug === team.slug && other.slug !== team.slug);
  const ordered: SnapshotTeam[] = [];
  let remaining = [...teams];
  while (remaining.length > 0) {
    const ready = remaining.filter((team) => !holderOf(team, remaining));
    if (ready.length === 0) {
      for (const team of remaining) {
        const holder = holderOf(team, remaining)!;
        problems.add(
          say.slugCycle(
            locate('teams', team.index, team.id),
            team.slug,
            locate('teams', holder.index, holder.id),
            holder.slug,
          ),
        );
      }
      return ordered;
    }
    ordered.push(...ready);
    remaining = remaining.filter((team) => !ready.includes(team));
  }
  return ordered;
}
