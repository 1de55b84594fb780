import {
  BatchGetItemCommand,
  QueryCommand,
  type AttributeValue,
  type ConsumedCapacity,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { Ordinals } from './pagination.ts';
import type { ListResource } from '../table/keys.ts';
import {
  generationPartition,
  membershipEntry,
  ordinalKey,
  teamKeyForSegment,
  tokenKey,
  type Key,
} from '../table/keys.ts';
import { untilProcessed } from '../table/retry.ts';

/** An item as DynamoDB's wire format has it. */
type RawItem = Record<string, AttributeValue>;

/** What every request needs to know about its team: which team, and the members generation a token must name. */
export interface TeamState {
  teamId: number;
  membersGeneration: string;
}

/** A list of a team as its head names it: the generation readers use, and how many items it holds. */
export interface ListState {
  generation: string;
  count: number;
}

/** A list request's view of its team, from the team's head item (small: no members, no finance). */
export interface TeamHead extends TeamState {
  lists: Record<ListResource, ListState>;
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
 * otherwise. That is safe for the page Query because a generation's items never change once
 * the head names it: the only possible error is to miss some, and the head says how many the page
 * must hold (readPage). For the token and the head it means AWS may answer from a replica up to
 * about a second behind (docs/storage.md).
 */
export class TeamReader {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;

  constructor(client: DynamoDBClient, { tableName }: { tableName: string }) {
    this.client = client;
    this.tableName = tableName;
  }

  /** A list's first read: the token and the team head together, in one BatchGetItem. */
  async readTokenAndHead(
    tokenHash: string,
    teamSegment: string,
    options: ReadOptions = {},
  ): Promise<{ token?: StoredToken; team?: TeamHead }> {
    const teamKey = teamKeyForSegment(teamSegment, 'HEAD');
    const { token, team } = await this.readTokenWithTeamItem(tokenHash, teamKey, options);
    return {
      token,
      team: team && {
        ...toTeamState(team),
        lists: { projects: toList(team, 'projects'), daemons: toList(team, 'daemons') },
      },
    };
  }

  /** A finances request's one read: the token and the team's finance item, in one BatchGetItem. */
  async readTokenAndFinance(
    tokenHash: string,
    teamSegment: string,
    options: ReadOptions = {},
  ): Promise<{ token?: StoredToken; team?: TeamFinance }> {
    const teamKey = teamKeyForSegment(teamSegment, 'FINANCE');
    const { token, team } = await this.readTokenWithTeamItem(tokenHash, teamKey, options);
    const tag = team && String((team.finance_fingerprint ?? team.generation)?.S);
    return { token, team: team && { ...toTeamState(team), fieldsJson: String(team.finance?.S), tag: tag! } };
  }

  /**
   * The page's items (each item's JSON), by ordinal range, in one eventually consistent Query,
   * unless `readEarly` holds what such a Query already read of this generation (whose counts,
   * and so the page's ordinals, never change). The head promised every ordinal from `first` to
   * `last`: a page that holds fewer (a replica behind the import that wrote the generation) is
   * read again strongly consistent, once, and still short it is refused (ShortPage: a 503), never
   * served.
   */
  async readPage(
    head: TeamHead,
    resource: ListResource,
    ordinals: Ordinals,
    options: ReadOptions = {},
    readEarly?: string[],
  ): Promise<string[]> {
    const expected = ordinals.last - ordinals.first + 1;
    let items = readEarly ?? (await this.queryPage(head, resource, ordinals, options));
    if (items.length !== expected)
      items = await this.queryPage(head, resource, ordinals, { ...options, consistent: true });
    if (items.length !== expected) throw new ShortPage(`a page promised ${expected} items and held ${items.length}`);
    return items;
  }

  /**
   * The items of a page of the list's generation the head names, by ordinal range, in one Query
   * (eventually consistent unless asked).
   */
  async queryPage(
    team: TeamHead,
    resource: ListResource,
    { first, last }: Ordinals,
    { consistent, signal, usage }: ReadOptions,
  ): Promise<string[]> {
    const json: string[] = [];
    let startKey: RawItem | undefined;
    do {
      const query = this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :first AND :last',
          ExpressionAttributeValues: {
            ':pk': { S: generationPartition(team.teamId, team.lists[resource].generation, resource) },
            ':first': { S: ordinalKey(first) },
            ':last': { S: ordinalKey(last) },
          },
          ProjectionExpression: 'j',
          ConsistentRead: consistent,
          ExclusiveStartKey: startKey,
          ReturnConsumedCapacity: 'TOTAL',
        }),
        { abortSignal: signal },
      );
      const result = await (usage?.track(query) ?? query);
      for (const item of result.Items ?? []) json.push(item.j!.S!);
      startKey = result.LastEvaluatedKey;
    } while (startKey);
    return json;
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

// A head or finance item written before each part had a generation of its own holds one
// `generation` for all of them: read as such, it serves as it did.

function toTeamState(item: RawItem): TeamState {
  return {
    teamId: Number(item.team_id?.N),
    membersGeneration: String((item.members_generation ?? item.generation)?.S),
  };
}

function toList(item: RawItem, resource: ListResource): ListState {
  return {
    generation: String((item[`${resource}_generation`] ?? item.generation)?.S),
    count: Number(item[resource]?.N),
  };
}
