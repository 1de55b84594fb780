import { stat } from 'node:fs/promises';
import { TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { daemonJson, projectJson, type Daemon, type Project } from '../store/resources.ts';
import { membershipEntry, pendingKey, pendingTokenKey, teamFinanceKey, teamHeadKey, tokenKey, userIdOf, userKey, userTokenKey, type Key } from '../store/keys.ts';
import { getItems } from '../store/batch-get.ts';
import { BatchWriter, writeAll, type WriteRequest } from '../store/batch-write.ts';
import { forEachConcurrently } from '../store/concurrently.ts';
import { changeUsersMemberships, listUserTokens } from '../store/memberships.ts';
import { financeFieldsJson } from './finance.ts';
import { ordinalOf } from './id-list.ts';
import { readSnapshotRecords } from './json-records.ts';
import { ImportLock, LockLost, type LockOptions } from './lock.ts';
import { locate, Problems, say } from './problems.ts';
import { Retention } from './retention.ts';
import { LIMITS } from './snapshot.ts';
import { toUtcTimestamp } from './timestamp.ts';
import { financeItem, headItem, memberItem, newGenerationId, pendingItem, resourceItem, retiredItem } from './stored-items.ts';
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
 * 3. Write each new generation: member index, new tokens (inactive), the entry
 *    `<team>#<generation>` added to every token of every member, every project and daemon (read
 *    again from the file, whose fingerprint must not have changed). Users then list old and new
 *    teams, and tokens created meanwhile get their entries too (a token created later finds the
 *    pending generations itself: commands/tokens/tokens.ts).
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

export interface ImportSummary {
  teams: number;
  items: number;
  users: number;
  tokens: number;
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

export async function importSnapshot(doc: DynamoDBDocumentClient, tableName: string, snapshot: ValidSnapshot, options: ImportOptions = {}): Promise<ImportSummary> {
  await assertUnchanged(snapshot);
  const lock = await ImportLock.acquire(doc, tableName, { ...options.lock, onWait: options.log });
  try {
    await new Import(doc, tableName, snapshot, lock, options).run();
  } catch (error) {
    // The import's own failure is the one to report; a lock not released expires by itself.
    await lock.release().catch(() => {});
    throw error;
  }
  await lock.release();
  return { teams: snapshot.teams.length, items: snapshot.items, users: snapshot.users.length, tokens: snapshot.tokens.length };
}

class Import {
  private readonly teamsById: Map<number, SnapshotTeam>;
  private readonly generations = new Map<number, string>();
  /** Each member of a snapshot team, with the snapshot teams they are a member of. */
  private readonly members = new Map<number, number[]>();
  /** Each member's tokens as listed before the first write. */
  private readonly memberTokens = new Map<number, string[]>();
  /** Snapshot tokens not in the table, or left inactive by a killed import: written inactive, activated last. */
  private newTokens: SnapshotToken[] = [];
  /** Snapshot tokens already in the table, as stored. */
  private readonly stored = new Map<SnapshotToken, TokenItem>();
  private readonly usersById: Map<number, SnapshotUser>;
  /** The teams each snapshot user lists in the table now. */
  private readonly listedTeams = new Map<number, number[]>();
  private readonly retention: Retention;
  private readonly beforeWrite = () => this.lock.assertHeld();
  private readonly clock: () => number;

  private readonly doc: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly snapshot: ValidSnapshot;
  private readonly lock: ImportLock;
  private readonly options: ImportOptions;

  constructor(doc: DynamoDBDocumentClient, tableName: string, snapshot: ValidSnapshot, lock: ImportLock, options: ImportOptions) {
    this.doc = doc;
    this.tableName = tableName;
    this.snapshot = snapshot;
    this.lock = lock;
    this.options = options;
    this.clock = options.clock ?? Date.now;
    this.teamsById = new Map(snapshot.teams.map((team) => [team.id, team]));
    this.usersById = new Map(snapshot.users.map((user) => [user.id, user]));
    for (const team of snapshot.teams) {
      for (const userId of team.memberIds) this.members.set(userId, [...(this.members.get(userId) ?? []), team.id]);
    }
    this.retention = new Retention(doc, tableName, this.beforeWrite);
  }

  async run(): Promise<void> {
    const { heads, switchOrder } = await this.readTable();
    await this.retention.clearDeadImports();
    await this.narrowTokens();
    await this.writeGenerations();
    await this.writeUsers('during');
    await this.tagTokens(async (userId) => (await listUserTokens(this.doc, this.tableName, userId)).filter((hash) => !this.memberTokens.get(userId)!.includes(hash)));
    let switched = 0;
    for (const team of switchOrder) {
      await this.switchTeam(team, heads.get(team.id));
      await this.options.onProgress?.({ phase: 'switching', done: ++switched, total: switchOrder.length });
    }
    await this.retention.removeReplacedEntries();
    await this.writeUsers('after');
    await this.widenTokens();
    try {
      await this.retention.sweepRetired(this.clock());
    } catch (error) {
      // Every team is imported by now: what is left to remove, the next import removes.
      this.options.log?.(`the import is complete, but removing replaced generations stopped (${(error as Error).message}); the next import will finish it`);
    }
  }

  // ---- 1. What the import depends on; rejections before the first write ----------------

  private async readTable(): Promise<{ heads: Map<number, HeadItem>; switchOrder: SnapshotTeam[] }> {
    const { teams, tokens, users } = this.snapshot;
    const problems = new Problems();
    const heads = new Map((await this.get<HeadItem>(teams.map((t) => teamHeadKey(t.id)))).map((item) => [item.team_id, item]));
    const slugHolders = new Map((await this.get<HeadItem>(teams.map((t) => teamHeadKey(t.slug)))).map((item) => [item.slug, item]));
    for (const team of teams) {
      const holder = slugHolders.get(team.slug);
      if (holder && holder.team_id !== team.id && !this.teamsById.has(holder.team_id)) {
        problems.add(say.slugTaken(locate('teams', team.index, team.id), team.slug, holder.team_id));
      }
    }
    const switchOrder = orderForSlugMoves(teams, heads, problems);

    const existing = new Map((await this.get<TokenItem & Key>(tokens.map((t) => tokenKey(t.hash)))).map((item) => [item.pk, item]));
    for (const token of tokens) {
      const stored = existing.get(tokenKey(token.hash).pk);
      // A token a killed import left inactive was never valid: this import takes it over.
      if (!stored || stored.inactive) this.newTokens.push(token);
      else if (Number(stored.user_id) !== token.userId) problems.add(say.tokenOfAnotherUser(locate('tokens', token.index), Number(stored.user_id)));
      else this.stored.set(token, stored);
    }

    for (const item of await this.get<Key & { teams?: number[] }>(users.map((u) => userKey(u.id)))) this.listedTeams.set(userIdOf(item), item.teams ?? []);
    users.forEach((user, index) => {
      const teamCount = this.teamsOf(user.id, 'after').length;
      if (teamCount > LIMITS.teamsPerUser) problems.add(say.tooManyTeams(locate('users', index, user.id), teamCount, LIMITS.teamsPerUser));
    });
    if (problems.count > 0) throw new ImportRejected(problems.lines());
    return { heads, switchOrder };
  }

  /**
   * The teams a user lists: the snapshot's, and those outside the snapshot it is in (their
   * membership is unchanged). While the import runs, also those it is leaving, so that a token
   * created meanwhile finds every team it may read.
   */
  private teamsOf(userId: number, when: 'during' | 'after'): number[] {
    const listed = this.listedTeams.get(userId) ?? [];
    const kept = when === 'during' ? listed : listed.filter((teamId) => !this.teamsById.has(teamId));
    return [...new Set([...(this.usersById.get(userId)?.teams ?? []), ...kept])];
  }

  // ---- 2. Tokens: narrowing first, widening last -----------------------------------------

  /** What the snapshot takes away from an existing token: an earlier expiry, abilities removed. */
  private async narrowTokens(): Promise<void> {
    await forEachConcurrently(this.stored, 16, async ([token, stored]) => {
      const abilities = commonAbilities(stored.abilities, token.abilities);
      const expiresAt = earlierExpiry(stored.expires_at, token.expiresAt);
      if (String(abilities) === String(stored.abilities) && expiresAt === stored.expires_at) return;
      await this.updateToken(token, 'SET abilities = :abilities, expires_at = :expires', { ':abilities': abilities, ':expires': expiresAt });
    });
  }

  /** The snapshot's tokens as it says (abilities, expiry, name, Sanctum id), and valid: after the last switch. A revocation stays. */
  private async widenTokens(): Promise<void> {
    await forEachConcurrently(this.snapshot.tokens, 16, async (token) => {
      const name = token.name === undefined ? { remove: ', #name', set: '' } : { remove: '', set: ', #name = :name' };
      const sanctumId = token.sanctumId === undefined ? { remove: ', sanctum_id', set: '' } : { remove: '', set: ', sanctum_id = :sanctumId' };
      await this.updateToken(token, `SET abilities = :abilities, expires_at = :expires${name.set}${sanctumId.set} REMOVE inactive${name.remove}${sanctumId.remove}`, {
        ':abilities': token.abilities, ':expires': token.expiresAt, ...(token.name !== undefined && { ':name': token.name }),
        ...(token.sanctumId !== undefined && { ':sanctumId': token.sanctumId }),
      }, { '#name': 'name' });
    });
    await this.write(this.newTokens.map((token) => ({ DeleteRequest: { Key: pendingTokenKey(token.hash) } })));
  }

  private async updateToken(token: SnapshotToken, UpdateExpression: string, values: Record<string, unknown>, ExpressionAttributeNames?: Record<string, string>) {
    this.lock.assertHeld();
    await this.doc.send(new UpdateCommand({
      TableName: this.tableName, Key: tokenKey(token.hash), UpdateExpression, ExpressionAttributeNames,
      ConditionExpression: 'user_id = :user', ExpressionAttributeValues: { ...values, ':user': token.userId },
    }));
  }

  // ---- 3. New generations ----------------------------------------------------------------

  private entriesOf(userId: number): string[] {
    return (this.members.get(userId) ?? []).map((teamId) => membershipEntry(teamId, this.generations.get(teamId)!));
  }

  private async writeGenerations(): Promise<void> {
    const now = this.clock();
    for (const team of this.snapshot.teams) this.generations.set(team.id, newGenerationId(now));
    // Reserved in the ledger first, as are new tokens: whatever a killed import wrote, the next finds.
    await this.write([
      ...this.snapshot.teams.map((team) => put(pendingItem(team.id, this.generations.get(team.id)!, now))),
      ...this.newTokens.map((token) => put({ ...pendingTokenKey(token.hash), user_id: token.userId })),
    ]);
    await this.write(function* (this: Import) {
      // The member index: whoever removes a generation's entries finds its members through it.
      for (const team of this.snapshot.teams) for (const userId of team.memberIds) yield put(memberItem(team.id, this.generations.get(team.id)!, userId));
      for (const token of this.newTokens) {
        yield put(newTokenItem(token, this.entriesOf(token.userId), new Date(now).toISOString()));
        yield put(userTokenKey(token.userId, token.hash));
      }
    }.call(this));
    await forEachConcurrently(this.members.keys(), 16, async (userId) => {
      this.memberTokens.set(userId, await listUserTokens(this.doc, this.tableName, userId));
    });
    await this.tagTokens(async (userId) => this.memberTokens.get(userId)!);
    await this.writeItems();
  }

  /** Adds the new generations' entries (added, never set) to the tokens `tokensOf` gives for each member (new tokens have theirs). */
  private async tagTokens(tokensOf: (userId: number) => Promise<string[]>): Promise<void> {
    const isNew = new Set(this.newTokens.map((token) => token.hash));
    const entries = [...this.members.keys()].map((userId): [number, string[]] => [userId, this.entriesOf(userId)]);
    await changeUsersMemberships(this.doc, this.tableName, entries, 'ADD', this.beforeWrite, async (userId) => (await tokensOf(userId)).filter((hash) => !isNew.has(hash)));
  }

  /** Pass 2: every project and daemon, from the file again, numbered by the ids pass 1 sorted. */
  private async writeItems(): Promise<void> {
    await assertUnchanged(this.snapshot);
    const total = this.snapshot.items;
    let done = 0;
    await this.options.onProgress?.({ phase: 'writing', done, total });
    const writer = new BatchWriter(this.doc, this.tableName, {
      beforeSend: this.beforeWrite,
      onWritten: (count) => this.options.onProgress?.({ phase: 'writing', done: (done += count), total }),
    });
    // Pass 1 checked every record of this file; its fingerprint is checked again below, before
    // any switch. So records are taken as they are here: a file changed meanwhile can only
    // leave garbage in a generation that is never switched to (and is swept).
    const read = await readSnapshotRecords(this.snapshot.path, {
      record: (collection, _index, fields) => {
        if (collection !== 'projects' && collection !== 'daemons') return undefined;
        const project = collection === 'projects';
        const team = this.teamsById.get((project ? fields.team_id : this.snapshot.environmentTeams.get(fields.environment_id as number)) as number);
        const ordinal = team ? ordinalOf(project ? team.projectIds : team.daemonIds, fields.id as number) : 0;
        const createdAt = project ? toUtcTimestamp(String(fields.created_at)) : '';
        if (!team || ordinal === 0 || createdAt === undefined) throw new SnapshotChanged(`one of its ${collection} was not validated`);
        const json = project
          ? projectJson({ ...(fields as unknown as Project), client_id: (fields.client_id ?? null) as number | null, created_at: createdAt })
          : daemonJson(fields as unknown as Daemon);
        return writer.put(resourceItem(team.id, this.generations.get(team.id)!, collection, ordinal, json));
      },
    }, new Problems());
    await writer.flush();
    if (!read.readable || read.sha256 !== this.snapshot.sha256) throw new SnapshotChanged('its SHA-256 differs');
    if (writer.written !== total) throw new SnapshotChanged(`${writer.written} items instead of ${total}`);
  }

  /** Users as the snapshot says, listing their teams (teamsOf). */
  private async writeUsers(when: 'during' | 'after'): Promise<void> {
    await this.write(this.snapshot.users.map((user) => put({ ...userKey(user.id), ...(user.name !== undefined && { name: user.name }), teams: this.teamsOf(user.id, when) })));
  }

  // ---- 4. The switch ------------------------------------------------------------------------

  private async switchTeam(team: SnapshotTeam, old: HeadItem | undefined): Promise<void> {
    const generation = this.generations.get(team.id)!;
    const counts = { projects: team.projectIds.length, daemons: team.daemonIds.length };
    const fieldsJson = financeFieldsJson(team.finance);
    type Condition = { ConditionExpression: string; ExpressionAttributeValues?: Record<string, unknown> };
    const put = (Item: Record<string, unknown>, condition: Condition | object = {}) => ({ Put: { TableName: this.tableName, Item, ...condition } });
    const ifOwnSlug: Condition = { ConditionExpression: 'attribute_not_exists(pk) OR team_id = :id', ExpressionAttributeValues: { ':id': team.id } };
    // Two imports cannot interleave: the head must still name the generation this one read.
    const ifStartedFrom: Condition = old
      ? { ConditionExpression: 'generation = :old', ExpressionAttributeValues: { ':old': old.generation } }
      : { ConditionExpression: 'attribute_not_exists(pk)' };
    const lockCheck = this.lock.conditionCheck();
    const actions: object[] = [
      put(headItem(team, team.id, generation, counts), ifStartedFrom),
      put(headItem(team, team.slug, generation, counts), ifOwnSlug),
      put(financeItem(team, fieldsJson, team.id, generation)),
      put(financeItem(team, fieldsJson, team.slug, generation), ifOwnSlug),
      { Delete: { TableName: this.tableName, Key: { ...pendingKey(team.id, generation) } } },
      lockCheck,
    ];
    if (old) actions.push(put(retiredItem(team.id, old.generation, this.clock())));
    if (old && old.slug !== team.slug) {
      for (const key of [teamHeadKey(old.slug), teamFinanceKey(old.slug)]) actions.push({ Delete: { TableName: this.tableName, Key: { ...key }, ...ifOwnSlug } });
    }
    this.lock.assertHeld();
    try {
      await this.doc.send(new TransactWriteCommand({ TransactItems: actions as never }));
    } catch (error) {
      if ((error as Error).name !== 'TransactionCanceledException') throw error;
      const reasons = (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
      if (reasons[actions.indexOf(lockCheck)]?.Code === 'ConditionalCheckFailed') throw new LockLost();
      throw new Error(`team ${team.id} changed while it was being imported (an import that does not take the lock ran at the same time); nothing of this team was switched: run the import again`, { cause: error });
    }
  }

  // ---- helpers ------------------------------------------------------------------------------

  /** Batch writes, each checking first that the lock is still this import's. */
  private async write(requests: Iterable<WriteRequest>): Promise<void> {
    await writeAll(this.doc, this.tableName, requests, { beforeSend: this.beforeWrite });
  }

  private async get<T>(keys: Key[]): Promise<T[]> {
    return (await getItems(this.doc, this.tableName, keys, { consistent: true })) as T[];
  }
}

const put = (item: object): WriteRequest => ({ PutRequest: { Item: item as Record<string, unknown> } });

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

function newTokenItem(token: SnapshotToken, entries: string[], createdAt: string): Record<string, unknown> {
  return {
    ...tokenKey(token.hash),
    user_id: token.userId,
    abilities: token.abilities,
    expires_at: token.expiresAt,
    ...(token.name !== undefined && { name: token.name }),
    ...(token.sanctumId !== undefined && { sanctum_id: token.sanctumId }),
    created_at: createdAt,
    inactive: true,
    ...(entries.length > 0 && { memberships: new Set(entries) }),
  };
}

/** The file must still be the one pass 1 validated (its fingerprint is checked again in pass 2). */
async function assertUnchanged(snapshot: ValidSnapshot): Promise<void> {
  const { size, mtimeMs } = await stat(snapshot.path);
  if (size !== snapshot.bytes || mtimeMs !== snapshot.modifiedMs) throw new SnapshotChanged('its size or modification time differs');
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
        problems.add(say.slugCycle(locate('teams', team.index, team.id), team.slug, locate('teams', holder.index, holder.id), holder.slug));
      }
      return ordered;
    }
    ordered.push(...ready);
    remaining = remaining.filter((team) => !ready.includes(team));
  }
  return ordered;
}
