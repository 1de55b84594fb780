import { BatchGetItemCommand, QueryCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { ListResource } from '../domain/resources.ts';
import { membershipEntry, ordinalKey, resourcePartition, teamKeyForSegment, tokenKey, type Key } from './keys.ts';
import { untilProcessed } from './retry.ts';

/** An item as DynamoDB's wire format has it. */
type RawItem = Record<string, AttributeValue>;

/** What every request needs to know about its team: which team, and which generation is current. */
export interface TeamState {
  teamId: number;
  generation: string;
}

/** A list request's view of its team, from the team's head item (small: no members, no finance). */
export interface TeamHead extends TeamState {
  slug: string;
  counts: Record<ListResource, number>;
}

/** A finances request's view of its team, from the team's finance item. */
export interface TeamFinance extends TeamState {
  /** The finance response's leading fields as JSON text (see commands/import/finance.ts). */
  fieldsJson: string;
}

export interface StoredToken {
  userId: number;
  abilities: string[];
  expiresAt: string | null;
  revokedAt: string | null;
  /** Written by an import that has not finished: not valid yet (answers as an unknown token). */
  inactive: boolean;
  /** `<team id>#<generation>` entries: the generations of teams whose members include the user. */
  memberships: ReadonlySet<string>;
}

/** Whether the token's user is a member of the team in the generation the request reads. */
export function isMember(token: StoredToken, team: TeamState): boolean {
  return token.memberships.has(membershipEntry(team.teamId, team.generation));
}

/** A page came back with fewer items than the head promised, even when read again (503, never a short 200). */
export class ShortPage extends Error {
  constructor(expected: number, got: number) {
    super(`a page promised ${expected} items and held ${got}`);
    this.name = 'ShortPage';
  }
}

/** One DynamoDB call, reported to an optional observer (benchmarks and tests count them). */
export interface CallReport {
  operation: 'BatchGetItem' | 'Query';
  readCapacity: number;
  items: number;
}

export interface ReaderOptions {
  tableName: string;
  observe?: (call: CallReport) => void;
}

/**
 * The read side of the store: everything the three functions ask of DynamoDB, in at most two
 * sequential round trips. Only GetItem-family reads and Query: never Scan, never a write.
 *
 * It sends the plain commands (BatchGetItemCommand, QueryCommand) and converts the few attributes
 * it reads itself. The document client's generic marshalling (every key, every attribute of every
 * item, through its own middleware) cost a warm finances request 26 µs of CPU, about 3% of it, and
 * bundling the document client cost every cold start its import (bench/README.md).
 */
export class TeamReader {
  private readonly client: DynamoDBClient;
  private readonly options: ReaderOptions;

  constructor(client: DynamoDBClient, options: ReaderOptions) {
    this.client = client;
    this.options = options;
  }

  /** A list's round trip 1: the token and the team head together, in one BatchGetItem. */
  async readAccess(tokenHash: string, teamSegment: string, signal?: AbortSignal): Promise<{ token?: StoredToken; head?: TeamHead }> {
    const { token, team } = await this.readTokenAnd(tokenHash, teamKeyForSegment(teamSegment, 'head'), signal);
    return { token, head: team && toTeamHead(team) };
  }

  /** A finances request's one round trip: the token and the team's finance item, in one BatchGetItem. */
  async readFinanceAccess(tokenHash: string, teamSegment: string, signal?: AbortSignal): Promise<{ token?: StoredToken; finance?: TeamFinance }> {
    const { token, team } = await this.readTokenAnd(tokenHash, teamKeyForSegment(teamSegment, 'finance'), signal);
    return { token, finance: team && toTeamFinance(team) };
  }

  /**
   * Round trip 2: the page's items, by ordinal range, in one Query. Returns each item's JSON.
   * The head promised every ordinal from `first` to `last`; a page that holds fewer is read
   * again, strongly consistent, once, and still short it is refused (ShortPage), never served.
   */
  async readPage(head: TeamHead, resource: ListResource, first: number, last: number, signal?: AbortSignal): Promise<string[]> {
    const expected = last - first + 1;
    let items = await this.queryPage(head, resource, first, last, signal);
    if (items.length !== expected) items = await this.queryPage(head, resource, first, last, signal);
    if (items.length !== expected) throw new ShortPage(expected, items.length);
    return items;
  }

  private async queryPage(head: TeamHead, resource: ListResource, first: number, last: number, signal?: AbortSignal): Promise<string[]> {
    const json: string[] = [];
    let startKey: RawItem | undefined;
    do {
      const result = await this.client.send(
        new QueryCommand({
          TableName: this.options.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :first AND :last',
          ExpressionAttributeValues: {
            ':pk': { S: resourcePartition(head.teamId, head.generation, resource) },
            ':first': { S: ordinalKey(first) },
            ':last': { S: ordinalKey(last) },
          },
          ProjectionExpression: 'j',
          // The head named this generation only after all of it was written; a strongly
          // consistent read is what guarantees we see all of it.
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
          ReturnConsumedCapacity: this.options.observe ? 'TOTAL' : undefined,
        }),
        { abortSignal: signal },
      );
      for (const item of result.Items ?? []) json.push(item.j?.S as string);
      this.report('Query', result.ConsumedCapacity?.CapacityUnits, result.Items?.length ?? 0);
      startKey = result.LastEvaluatedKey;
    } while (startKey);
    return json;
  }

  private async readTokenAnd(tokenHash: string, teamKey: Key | undefined, signal?: AbortSignal): Promise<{ token?: StoredToken; team?: RawItem }> {
    const keys: Key[] = [tokenKey(tokenHash), ...(teamKey ? [teamKey] : [])];
    const items = await this.batchGet(keys, signal);
    const tokenItem = items.find((item) => item.pk?.S === keys[0]!.pk);
    const teamItem = teamKey && items.find((item) => item.pk?.S === teamKey.pk);
    return { token: tokenItem && toStoredToken(tokenItem), team: teamItem };
  }

  private async batchGet(keys: Key[], signal?: AbortSignal): Promise<RawItem[]> {
    const items: RawItem[] = [];
    const table = this.options.tableName;
    const requested = keys.map((key): RawItem => ({ pk: { S: key.pk }, sk: { S: key.sk } }));
    await untilProcessed('BatchGetItem', requested, async (pending) => {
      const result = await this.client.send(
        new BatchGetItemCommand({
          RequestItems: { [table]: { Keys: pending } },
          ReturnConsumedCapacity: this.options.observe ? 'TOTAL' : undefined,
        }),
        { abortSignal: signal },
      );
      const found = result.Responses?.[table] ?? [];
      items.push(...found);
      this.report('BatchGetItem', result.ConsumedCapacity?.[0]?.CapacityUnits, found.length);
      return result.UnprocessedKeys?.[table]?.Keys ?? [];
    }, { budget: 'request', signal });
    return items;
  }

  private report(operation: CallReport['operation'], readCapacity: number | undefined, items: number) {
    this.options.observe?.({ operation, readCapacity: readCapacity ?? 0, items });
  }
}

// The attributes as the importer and the token command write them (through the document client):
// numbers as N, strings as S, booleans as BOOL, `null` as NULL, string arrays as L, string sets
// as SS. Read back exactly as the document client would (an absent or NULL attribute is undefined).

const string = (value: AttributeValue | undefined): string | undefined => value?.S;
const number = (value: AttributeValue | undefined): number | undefined => (value?.N === undefined ? undefined : Number(value.N));
const NO_MEMBERSHIPS: ReadonlySet<string> = new Set();

function toStoredToken(item: RawItem): StoredToken {
  return {
    userId: Number(number(item.user_id)),
    abilities: item.abilities?.L?.map((ability) => ability.S as string) ?? [],
    expiresAt: string(item.expires_at) ?? null,
    revokedAt: string(item.revoked_at) ?? null,
    inactive: item.inactive?.BOOL === true,
    memberships: item.memberships?.SS ? new Set(item.memberships.SS) : NO_MEMBERSHIPS,
  };
}

function toTeamState(item: RawItem): TeamState {
  return { teamId: Number(number(item.team_id)), generation: String(string(item.generation)) };
}

function toTeamHead(item: RawItem): TeamHead {
  return {
    ...toTeamState(item),
    slug: String(string(item.slug)),
    counts: { projects: number(item.projects) ?? 0, daemons: number(item.daemons) ?? 0 },
  };
}

function toTeamFinance(item: RawItem): TeamFinance {
  return { ...toTeamState(item), fieldsJson: String(string(item.finance)) };
}
