import { stat } from 'node:fs/promises';
import { TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { daemonJson, projectJson, type Daemon } from '../../shared/domain/resources.ts';
import { membershipEntry, pendingKey, teamFinanceKey, teamHeadKey, tokenKey, userIdOf, userKey, userTokenKey, type Key } from '../../shared/store/keys.ts';
import { getItems } from '../store/batch-get.ts';
import { BatchWriter, writeAll } from '../store/batch-write.ts';
import { forEachConcurrently } from '../store/concurrently.ts';
import { DYNAMODB_LIMITS, itemSize } from '../store/item-size.ts';
import { addMemberships, listUserTokens } from '../store/memberships.ts';
import { financeFieldsJson } from './finance.ts';
import { ordinalOf } from './id-list.ts';
import { readSnapshotRecords } from './json-records.ts';
import { ImportLock, LockLost, type LockOptions } from './lock.ts';
import { locate, Problems, say } from './problems.ts';
import { sweep } from './retention.ts';
import type { Collection } from './snapshot.ts';
import { toUtcTimestamp } from './timestamp.ts';
import { financeItem, GENERATION_ID_LENGTH, headItem, memberItem, newGenerationId, pendingItem, resourceItem, retiredItem } from './stored-items.ts';
import type { SnapshotTeam, SnapshotToken, ValidSnapshot } from './validation.ts';

/**
 * Pass 2 of an import, and everything around it (docs/contract.md, section 7, docs/storage.md). Each
 * team of the snapshot is written as a new generation beside the one readers use, its members
 * included, then switched to in one transaction with its finance summary. In order:
 *
 * 1. Take the table's import lock (lock.ts), and read what the import depends on: the teams'
 *    heads and slugs, the members' tokens, the snapshot's tokens. Anything the table makes
 *    impossible (a slug held by another team, a token of another user, a token that would grow
 *    past DynamoDB's item size) rejects the import before its first write.
 * 2. Reserve a new generation per team (pending in the ledger, so a dead import's is swept).
 * 3. Write each new generation: its member index, the membership entry `<team>#<generation>`
 *    added to every token of every member (tokens new in the snapshot are written inactive),
 *    then every project and daemon, read again from the file (its fingerprint must not change).
 * 4. Switch the teams, one transaction each: both head copies, both finance copies, the ledger
 *    (pending to current, the old generation retired with the time), on condition that the head
 *    still names the generation this import started from and that the lock is still ours. A
 *    team's members switch with its data: a reader checks the entry of the head's generation.
 * 5. After the last switch: users upserted, members' tokens listed again (a token created during
 *    the import gets its entries), then the snapshot's tokens updated and activated.
 * 6. Sweep what retention allows (retention.ts), and release the lock.
 *
 * Killed anywhere, it leaves every team whole (old or new, each with its own members), no new
 * token valid, and a lock that the next import takes over; run again, it completes.
 */

export type ImportPhase = 'writing' | 'switching' | 'members' | 'sweeping';
export interface ImportProgress {
  phase: ImportPhase;
  done: number;
  total: number;
}

export interface ImportOptions {
  /** Called as the import goes; an async observer is awaited (the import waits for it). */
  onProgress?: (progress: ImportProgress) => void | Promise<void>;
  /** One line per event worth a line (waiting for a lock, sweeping). */
  log?: (line: string) => void;
  concurrency?: number;
  /** Wall-clock milliseconds: retention and the lock's lease are measured with it. */
  clock?: () => number;
  lock?: Pick<LockOptions, 'leaseMs' | 'renewEveryMs'>;
}

export interface ImportSummary {
  teams: number;
  items: number;
  users: number;
  tokens: number;
  /** Generations deleted by the retention sweep. */
  swept: number;
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
  pk: string;
  user_id: number;
}

export async function importSnapshot(doc: DynamoDBDocumentClient, tableName: string, snapshot: ValidSnapshot, options: ImportOptions = {}): Promise<ImportSummary> {
  const clock = options.clock ?? Date.now;
  await assertUnchanged(snapshot);
  const lock = await ImportLock.acquire(doc, tableName, { ...options.lock, now: clock, onWait: options.log });
  let summary: ImportSummary;
  try {
    summary = await new Import(doc, tableName, snapshot, lock, options, clock).run();
  } catch (error) {
    // The import's own failure is the one to report; a lock not released expires by itself.
    await lock.release().catch(() => {});
    throw error;
  }
  await lock.release();
  return summary;
}

class Import {
  private readonly doc: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly snapshot: ValidSnapshot;
  private readonly lock: ImportLock;
  private readonly options: ImportOptions;
  private readonly clock: () => number;
  private readonly teamsById: Map<number, SnapshotTeam>;
  private readonly generations = new Map<number, string>();
  /** Each member's tokens as found before the first write. */
  private readonly memberTokens = new Map<number, string[]>();
  /** Snapshot tokens not yet in the table: written inactive, activated after the last switch. */
  private newTokens: SnapshotToken[] = [];

  constructor(doc: DynamoDBDocumentClient, tableName: string, snapshot: ValidSnapshot, lock: ImportLock, options: ImportOptions, clock: () => number) {
    this.doc = doc;
    this.tableName = tableName;
    this.snapshot = snapshot;
    this.lock = lock;
    this.options = options;
    this.clock = clock;
    this.teamsById = new Map(snapshot.teams.map((team) => [team.id, team]));
  }

  async run(): Promise<ImportSummary> {
    const { heads, switchOrder } = await this.readTable();
    await this.reserveGenerations();
    await this.writeGenerations();
    let switched = 0;
    for (const team of switchOrder) {
      await this.switchTeam(team, heads.get(team.id));
      await this.progress({ phase: 'switching', done: ++switched, total: switchOrder.length });
    }
    await this.afterSwitches();
    let swept = 0;
    try {
      swept = await sweep(this.doc, this.tableName, {
        now: this.clock(),
        beforeWrite: () => this.lock.assertHeld(),
        onSwept: () => swept++,
      });
    } catch (error) {
      // Every team is imported by now: what is left to remove, the next import removes.
      this.options.log?.(`the import is complete, but removing replaced generations stopped (${(error as Error).message}); the next import will finish it`);
    }
    return { teams: this.snapshot.teams.length, items: this.snapshot.items, users: this.snapshot.users.length, tokens: this.snapshot.tokens.length, swept };
  }

  // ---- 1. What the import depends on; rejections before the first write ----------------

  private async readTable(): Promise<{ heads: Map<number, HeadItem>; switchOrder: SnapshotTeam[] }> {
    const { teams } = this.snapshot;
    const problems = new Problems();
    const heads = new Map((await this.get(teams.map((t) => teamHeadKey(t.id)))).map((item) => [(item as unknown as HeadItem).team_id, item as unknown as HeadItem]));
    const slugHolders = new Map((await this.get(teams.map((t) => teamHeadKey(t.slug)))).map((item) => [(item as unknown as HeadItem).slug, item as unknown as HeadItem]));
    for (const team of teams) {
      const holder = slugHolders.get(team.slug);
      if (holder && holder.team_id !== team.id && !this.teamsById.has(holder.team_id)) {
        problems.addRelation(say.slugTaken(locate('teams', team.index, team.id), team.slug, holder.team_id));
      }
    }
    const switchOrder = orderForSlugMoves(teams, heads, problems);
    await this.readTokens(problems);
    if (problems.count > 0) throw new ImportRejected(problems.lines());
    return { heads, switchOrder };
  }

  /** The snapshot's tokens and every member's tokens: owners, and sizes once the entries are added. */
  private async readTokens(problems: Problems): Promise<void> {
    const existing = new Map((await this.get(this.snapshot.tokens.map((t) => tokenKey(t.hash)))).map((item) => [String(item.pk), item]));
    for (const token of this.snapshot.tokens) {
      const stored = existing.get(tokenKey(token.hash).pk) as TokenItem | undefined;
      if (stored && Number(stored.user_id) !== token.userId) problems.addRelation(say.tokenOfAnotherUser(locate('tokens', token.index), Number(stored.user_id)));
    }
    this.newTokens = this.snapshot.tokens.filter((token) => !existing.has(tokenKey(token.hash).pk));

    const members = this.members();
    await forEachConcurrently(members.keys(), 16, async (userId) => {
      this.memberTokens.set(userId, await listUserTokens(this.doc, this.tableName, userId));
    });
    const hashes = [...this.memberTokens.values()].flat();
    const items = new Map((await this.get(hashes.map(tokenKey))).map((item) => [String(item.pk), item]));
    for (const [userId, teamIds] of members) {
      const entriesBytes = teamIds.reduce((n, teamId) => n + Buffer.byteLength(membershipEntry(teamId, 'g'.repeat(GENERATION_ID_LENGTH))), 0);
      for (const hash of this.memberTokens.get(userId) ?? []) {
        const item = items.get(tokenKey(hash).pk);
        const bytes = item ? itemSize(item) + entriesBytes : 0;
        if (bytes > DYNAMODB_LIMITS.itemBytes) problems.addRelation(say.tokenTooLarge(userId, bytes, DYNAMODB_LIMITS.itemBytes));
      }
    }
  }

  /** Each member of a snapshot team, with the snapshot teams they are a member of. */
  private members(): Map<number, number[]> {
    const members = new Map<number, number[]>();
    for (const team of this.snapshot.teams) {
      for (const userId of team.memberIds) members.set(userId, [...(members.get(userId) ?? []), team.id]);
    }
    return members;
  }

  // ---- 2. and 3. New generations ----------------------------------------------------------

  private async reserveGenerations(): Promise<void> {
    const now = this.clock();
    for (const team of this.snapshot.teams) this.generations.set(team.id, newGenerationId(now));
    this.lock.assertHeld();
    await writeAll(this.doc, this.tableName, this.snapshot.teams.map((team) => ({ PutRequest: { Item: pendingItem(team.id, this.generations.get(team.id)!, now) } })));
  }

  private async writeGenerations(): Promise<void> {
    const members = this.members();
    const entriesOf = (userId: number) => (members.get(userId) ?? []).map((teamId) => membershipEntry(teamId, this.generations.get(teamId)!));
    const beforeSend = () => this.lock.assertHeld();

    // The member index first: whoever sweeps a generation finds its entries on tokens through it.
    const writer = new BatchWriter(this.doc, this.tableName, { concurrency: this.options.concurrency, beforeSend });
    for (const team of this.snapshot.teams) {
      for (const userId of team.memberIds) await writer.put(memberItem(team.id, this.generations.get(team.id)!, userId));
    }
    // Tokens new in the snapshot: inactive (invalid) until every team has switched.
    for (const token of this.newTokens) {
      await writer.put(newTokenItem(token, entriesOf(token.userId), new Date(this.clock()).toISOString()));
      await writer.put(userTokenKey(token.userId, token.hash) as unknown as Record<string, unknown>);
    }
    await writer.flush();
    // Every existing token of every member gets the new generations' entries (added, never set).
    await forEachConcurrently(this.memberTokens, 16, async ([userId, hashes]) => {
      for (const hash of hashes) {
        this.lock.assertHeld();
        await addMemberships(this.doc, this.tableName, hash, entriesOf(userId));
      }
    });
    await this.writeItems();
  }

  /** Pass 2: every project and daemon, from the file again, numbered by the ids pass 1 sorted. */
  private async writeItems(): Promise<void> {
    await assertUnchanged(this.snapshot);
    const total = this.snapshot.items;
    let done = 0;
    await this.progress({ phase: 'writing', done, total });
    const writer = new BatchWriter(this.doc, this.tableName, {
      concurrency: this.options.concurrency,
      beforeSend: () => this.lock.assertHeld(),
      onWritten: (count) => this.progress({ phase: 'writing', done: (done += count), total }),
    });
    const changed = (what: string) => new SnapshotChanged(what);
    // Pass 1 checked every record of this file; its fingerprint is checked again below, before
    // any switch. So records are taken as they are here: a file changed meanwhile can only
    // leave garbage in a generation that is never switched to (and is swept).
    const read = await readSnapshotRecords(this.snapshot.path, {
      record: (collection: Collection, _index: number, fields: Record<string, unknown>) => {
        if (collection === 'projects') {
          const team = this.teamsById.get(fields.team_id as number);
          const ordinal = team ? ordinalOf(team.projectIds, fields.id as number) : 0;
          const createdAt = toUtcTimestamp(String(fields.created_at));
          if (!team || ordinal === 0 || createdAt === undefined) throw changed('a project that was not validated');
          const project = { id: fields.id as number, name: fields.name as string, slug: fields.slug as string, client_id: (fields.client_id ?? null) as number | null, created_at: createdAt };
          return writer.put(resourceItem(team.id, this.generations.get(team.id)!, 'projects', ordinal, projectJson(project)));
        }
        if (collection === 'daemons') {
          const team = this.teamsById.get(this.snapshot.environmentTeams.get(fields.environment_id as number) ?? 0);
          const ordinal = team ? ordinalOf(team.daemonIds, fields.id as number) : 0;
          if (!team || ordinal === 0) throw changed('a daemon that was not validated');
          return writer.put(resourceItem(team.id, this.generations.get(team.id)!, 'daemons', ordinal, daemonJson(fields as unknown as Daemon)));
        }
        return undefined;
      },
    }, new Problems());
    await writer.flush();
    if (!read.readable || read.sha256 !== this.snapshot.sha256) throw changed('its SHA-256 differs');
    if (writer.written !== total) throw changed(`${writer.written} items instead of ${total}`);
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
      actions.push(
        { Delete: { TableName: this.tableName, Key: { ...teamHeadKey(old.slug) }, ...ifOwnSlug } },
        { Delete: { TableName: this.tableName, Key: { ...teamFinanceKey(old.slug) }, ...ifOwnSlug } },
      );
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

  // ---- 5. After the last switch ---------------------------------------------------------------

  private async afterSwitches(): Promise<void> {
    const members = this.members();
    await this.upsertUsers();
    // Members' tokens again: a token created while this import ran gets the new entries.
    let done = 0;
    await forEachConcurrently(members, 16, async ([userId, teamIds]) => {
      const known = new Set([...(this.memberTokens.get(userId) ?? []), ...this.newTokens.filter((t) => t.userId === userId).map((t) => t.hash)]);
      for (const hash of await listUserTokens(this.doc, this.tableName, userId)) {
        if (!known.has(hash)) await addMemberships(this.doc, this.tableName, hash, teamIds.map((teamId) => membershipEntry(teamId, this.generations.get(teamId)!)));
      }
      await this.progress({ phase: 'members', done: ++done, total: members.size });
    });
    // The snapshot's tokens: abilities, expiry and name as the snapshot says; now valid. A revoked
    // token stays revoked, and keeps its creation time.
    await forEachConcurrently(this.snapshot.tokens, 16, async (token) => {
      await this.doc.send(new UpdateCommand({
        TableName: this.tableName,
        Key: tokenKey(token.hash),
        UpdateExpression: [
          `SET abilities = :abilities, expires_at = :expires${token.name === undefined ? '' : ', #name = :name'}${token.sanctumId === undefined ? '' : ', sanctum_id = :sanctumId'}`,
          `REMOVE inactive${token.name === undefined ? ', #name' : ''}${token.sanctumId === undefined ? ', sanctum_id' : ''}`,
        ].join(' '),
        ConditionExpression: 'user_id = :user',
        ExpressionAttributeNames: { '#name': 'name' },
        ExpressionAttributeValues: {
          ':abilities': token.abilities, ':expires': token.expiresAt, ':user': token.userId,
          ...(token.name === undefined ? {} : { ':name': token.name }),
          ...(token.sanctumId === undefined ? {} : { ':sanctumId': token.sanctumId }),
        },
      }));
    });
  }

  /**
   * Users as the snapshot says. A user's `teams` speaks for the snapshot's teams only: teams
   * outside the snapshot that the user was in stay in the list (their membership is unchanged).
   */
  private async upsertUsers(): Promise<void> {
    const old = new Map((await this.get(this.snapshot.users.map((u) => userKey(u.id)))).map((item) => [userIdOf(item as unknown as Key), (item.teams as number[] | undefined) ?? []]));
    await writeAll(this.doc, this.tableName, this.snapshot.users.map((user) => {
      const kept = (old.get(user.id) ?? []).filter((teamId) => !this.teamsById.has(teamId));
      const teams = [...new Set([...user.teams, ...kept])];
      return { PutRequest: { Item: { ...userKey(user.id), ...(user.name === undefined ? {} : { name: user.name }), teams } } };
    }), { beforeSend: () => this.lock.assertHeld() });
  }

  // ---- helpers ------------------------------------------------------------------------------

  private get(keys: Key[]) {
    return getItems(this.doc, this.tableName, keys, { consistent: true });
  }

  private async progress(progress: ImportProgress): Promise<void> {
    await this.options.onProgress?.(progress);
  }
}

function newTokenItem(token: SnapshotToken, entries: string[], createdAt: string): Record<string, unknown> {
  return {
    ...tokenKey(token.hash),
    user_id: token.userId,
    abilities: token.abilities,
    expires_at: token.expiresAt,
    ...(token.name === undefined ? {} : { name: token.name }),
    ...(token.sanctumId === undefined ? {} : { sanctum_id: token.sanctumId }),
    created_at: createdAt,
    inactive: true,
    ...(entries.length > 0 ? { memberships: new Set(entries) } : {}),
  };
}

/** The file must still be the one pass 1 validated (its fingerprint is checked again in pass 2). */
async function assertUnchanged(snapshot: ValidSnapshot): Promise<void> {
  const { size, mtimeMs } = await stat(snapshot.path);
  if (size !== snapshot.bytes || mtimeMs !== snapshot.modifiedMs) throw new SnapshotChanged('its size or modification time differs');
}

/**
 * A team may take a slug another team of the same snapshot gives up; that team must switch
 * first. A cycle (two teams swapping slugs) cannot be ordered and is rejected.
 */
function orderForSlugMoves(teams: SnapshotTeam[], heads: Map<number, HeadItem>, problems: Problems): SnapshotTeam[] {
  const currentSlug = (team: SnapshotTeam) => heads.get(team.id)?.slug;
  const ordered: SnapshotTeam[] = [];
  let remaining = [...teams];
  while (remaining.length > 0) {
    const blocked = (team: SnapshotTeam) =>
      remaining.some((other) => other !== team && currentSlug(other) === team.slug && other.slug !== team.slug);
    const ready = remaining.filter((team) => !blocked(team));
    if (ready.length === 0) {
      for (const team of remaining) problems.addRelation(say.slugCycle(team.id, team.slug));
      return ordered;
    }
    ordered.push(...ready);
    remaining = remaining.filter((team) => !ready.includes(team));
  }
  return ordered;
}
