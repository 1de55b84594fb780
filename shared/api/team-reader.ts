import {
  BatchGetItemCommand,
  QueryCommand,
  type AttributeValue,
  type ConsumedCapacity,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { Ordinals } from './pagination.ts';
import type { ListResource } from '../table/keys.ts';
import { generationPartition, membershipEntry, teamKeyForSegment, tokenKey, type Key } from '../table/keys.ts';
import { decodeOverlay, type ListLayout, placedItems } from '../table/list-layout.ts';
import { untilProcessed } from '../table/retry.ts';

/** An item as DynamoDB's wire format has it. */
type RawItem = Record<string, AttributeValue>;

/** What every request needs to know about its team: which team, and the members generation a token must name. */
export interface TeamState {
  teamId: number;
  membersGeneration: string;
}

/**
 * A list request's view of its team, from the list's head (small: no members, no finance, not the
 * other list): which team, and where each of the list's items is (shared/table/list-layout.ts).
 */
export interface TeamHead extends TeamState {
  resource: ListResource;
  list: ListLayout;
}

/** A finances request's view of its team, from the team's finance item. */
export interface TeamFinance extends TeamState {
  /** The finance response's leading fields as JSON text (see shared/domain/finance.ts). */
  fieldsJson: string;
  /** The summary's fingerprint: its ETag changes when the summary does, and only then. */
  tag: string;
}

export interface StoredToken {
  userId: number;
  abilities: string[];
  expiresAt: string | null;
  revokedAt: string | null;
  /** Written by an import that has not finished: not valid yet (answers as an unknown token). */
  inactive: boolean;
  /** `<team id>#<members generation>` entries: the teams whose members include the user. */
  memberships: ReadonlySet<string>;
  /** The id of a token migrated from Laravel Sanctum, which an `<id>|<secret>` bearer must name. */
  sanctumId?: number;
}

/** Whether the token's user is a member of the team, in the members generation its head names. */
export function isMember(token: StoredToken, team: TeamState): boolean {
  return token.memberships.has(membershipEntry(team.teamId, team.membersGeneration));
}

/** A page came back with fewer items than the head promised, even when read again (503, never a short 200). */
export class ShortPage extends Error {
  override readonly name = 'ShortPage';
}

/** How a read is made: eventually consistent unless asked otherwise, abandoned when the request's signal aborts. */
export interface ReadOptions {
  /** A strongly consistent read: twice the capacity, and always the latest write. */
  consistent?: boolean;
  signal?: AbortSignal;
  /** Where the request's access line finds what it cost. */
  usage?: DatabaseUsage;
}

/**
 * What one request asked of DynamoDB, for its access line (the operators' metrics): round trips
 * it waited on one after another (calls in flight together count once) and the read capacity
 * DynamoDB reports for each call, asked for on the call itself, so counting adds no request.
 */
export class DatabaseUsage {
  roundTrips = 0;
  readCapacity = 0;
  private inFlight = 0;

  async track<T extends { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] }>(call: Promise<T>): Promise<T> {
    if (this.inFlight++ === 0) this.roundTrips += 1;
    try {
      const output = await call;
      for (const consumed of [output.ConsumedCapacity ?? []].flat()) this.readCapacity += consumed.CapacityUnits ?? 0;
      return output;
    } finally {
      this.inFlight -= 1;
    }
  }
}

/**
 * The read side of the store: everything the three functions ask of DynamoDB. Only BatchGetItem
 * and Query: never Scan, never a write. It sends the plain commands and decodes the few
 * attributes it reads itself, so the functions bundle no document client.
 *
 * Reads are eventually consistent (half the capacity of a strong read) unless a caller asks
 * otherwise. That is safe for the page Query because an item's key names one version of it, written
 * before the head that names it: the only possible error is to miss one, and the head says which
 * keys the page must hold (readPage). For the token and the head it means AWS may answer from a
 * replica up to about a second behind (docs/storage.md).
 */
export class TeamReader {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;

  constructor(client: DynamoDBClient, { tableName }: { tableName: string }) {
    this.client = client;
    this.tableName = tableName;
  }

  /** A list's first read: the token and the list's head together, in one BatchGetItem. */
  async readTokenAndHead(
    tokenHash: string,
    teamSegment: string,
    resource: ListResource,
    options: ReadOptions = {},
  ): Promise<{ token?: StoredToken; team?: TeamHead }> {
    const teamKey = teamKeyForSegment(teamSegment, resource);
    const { token, team } = await this.readTokenWithTeamItem(tokenHash, teamKey, options);
    return { token, team: team && { ...toTeamState(team), resource, list: toListLayout(team) } };
  }

  /** A finances request's one read: the token and the team's finance item, in one BatchGetItem. */
  async readTokenAndFinance(
    tokenHash: string,
    teamSegment: string,
    options: ReadOptions = {},
  ): Promise<{ token?: StoredToken; team?: TeamFinance }> {
    const teamKey = teamKeyForSegment(teamSegment, 'FINANCE');
    const { token, team } = await this.readTokenWithTeamItem(tokenHash, teamKey, options);
    const tag = team && String(team.finance_fingerprint?.S);
    return { token, team: team && { ...toTeamState(team), fieldsJson: String(team.finance?.S), tag: tag! } };
  }

  /**
   * The page's items (each item's JSON) in one eventually consistent Query, unless `readEarly` holds
   * what such a Query already read for the same keys. The head names the key of every item from
   * `first` to `last`: a page that lacks one (a replica behind the write that made it) is read again
   * strongly consistent, once, and still short it is refused (ShortPage: a 503), never served.
   */
  async readPage(head: TeamHead, ordinals: Ordinals, options: ReadOptions = {}, readEarly?: string[]) {
    const keys = pageKeys(head, ordinals);
    const expected = keys.length;
    let items = readEarly ?? (await this.queryPage(head, keys, options));
    if (items.length !== expected) items = await this.queryPage(head, keys, { ...options, consistent: true });
    if (items.length !== expected) throw new ShortPage(`a page promised ${expected} items and held ${items.length}`);
    return items;
  }

  /**
   * The items the keys name, in their order, from one Query of the key range between the first and
   * the last (eventually consistent unless asked). The range may also hold versions replaced within
   * the last five minutes (for readers of older heads) and items added since: they are left out.
   */
  async queryPage(
    team: TeamHead,
    keys: readonly string[],
    { consistent, signal, usage }: ReadOptions,
  ): Promise<string[]> {
    if (keys.length === 0) return [];
    const wanted = new Set(keys);
    const found = new Map<string, string>();
    let startKey: RawItem | undefined;
    do {
      const query = this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :first AND :last',
          ExpressionAttributeValues: {
            ':pk': { S: generationPartition(team.teamId, team.list.generation, team.resource) },
            ':first': { S: keys[0]! },
            ':last': { S: keys.at(-1)! },
          },
          ProjectionExpression: 'sk, j',
          ConsistentRead: consistent,
          ExclusiveStartKey: startKey,
          ReturnConsumedCapacity: 'TOTAL',
        }),
        { abortSignal: signal },
      );
      const result = await (usage?.track(query) ?? query);
      for (const item of result.Items ?? []) if (wanted.has(item.sk!.S!)) found.set(item.sk!.S!, item.j!.S!);
      startKey = result.LastEvaluatedKey;
    } while (startKey);
    return keys.flatMap((key) => (found.has(key) ? [found.get(key)!] : []));
  }

  /** The token by its hash and, in the same BatchGetItem, a team's item (when the segment can name one). */
  private async readTokenWithTeamItem(
    tokenHash: string,
    teamKey: Key | undefined,
    { consistent, signal, usage }: ReadOptions,
  ): Promise<{ token?: StoredToken; team?: RawItem }> {
    const items: RawItem[] = [];
    const token = tokenKey(tokenHash);
    const keys = [token, ...(teamKey ? [teamKey] : [])].map(
      (key): RawItem => ({ pk: { S: key.pk }, sk: { S: key.sk } }),
    );
    await untilProcessed(
      'BatchGetItem',
      keys,
      async (pending) => {
        const batch = this.client.send(
          new BatchGetItemCommand({
            RequestItems: { [this.tableName]: { Keys: pending, ConsistentRead: consistent } },
            ReturnConsumedCapacity: 'TOTAL',
          }),
          { abortSignal: signal },
        );
        const result = await (usage?.track(batch) ?? batch);
        items.push(...(result.Responses?.[this.tableName] ?? []));
        return result.UnprocessedKeys?.[this.tableName]?.Keys ?? [];
      },
      { retries: 4, signal },
    );
    const tokenItem = items.find((item) => item.pk?.S === token.pk);
    return { token: tokenItem && toStoredToken(tokenItem), team: items.find((item) => item !== tokenItem) };
  }
}

// The attributes as the importer and the token command write them (through the document client):
// numbers as N, strings as S, booleans as BOOL, string lists as L, string sets as SS.

function toStoredToken(item: RawItem): StoredToken {
  return {
    userId: Number(item.user_id?.N),
    abilities: item.abilities?.L?.map((ability) => ability.S!) ?? [],
    expiresAt: item.expires_at?.S ?? null,
    revokedAt: item.revoked_at?.S ?? null,
    inactive: item.inactive?.BOOL === true,
    memberships: new Set(item.memberships?.SS),
    sanctumId: item.sanctum_id?.N === undefined ? undefined : Number(item.sanctum_id.N),
  };
}

function toTeamState(item: RawItem): TeamState {
  return { teamId: Number(item.team_id?.N), membersGeneration: String(item.members_generation?.S) };
}

/** A list head's attributes (written by shared/write/items.ts, listHeadItem) as the list's layout. */
function toListLayout(item: RawItem): ListLayout {
  const revision = Number(item.revision?.N);
  return {
    generation: String(item.generation?.S),
    count: Number(item.count?.N),
    base: Number(item.base?.N),
    revision,
    entries: decodeOverlay(item.overlay?.B, revision),
  };
}

/** The keys of a page's items, as the list's head places them. */
export const pageKeys = (head: TeamHead, { first, last }: Ordinals) =>
  placedItems(head.list, first, last).map((item) => item.key);
