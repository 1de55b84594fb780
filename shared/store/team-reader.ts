import { BatchGetItemCommand, QueryCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Ordinals } from '../domain/pagination.ts';
import type { ListResource } from '../domain/resources.ts';
import { membershipEntry, ordinalKey, resourcePartition, teamKeyForSegment, tokenKey, type Key } from './keys.ts';
import type { Deadline } from '../deadline.ts';
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
  /** The id of a token migrated from Laravel Sanctum, which an `<id>|<secret>` bearer must name. */
  sanctumId?: number;
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
  consistent: boolean;
}

export interface ReaderOptions {
  tableName: string;
  observe?: (call: CallReport) => void;
  /**
   * How long one call can take at most by the client's own timeouts and retries
   * (dynamodb-client.ts API_CALL_BOUND_MS): a call that ends before the request's deadline anyway
   * is sent without an abort signal. Unset: every call gets the deadline's signal.
   */
  callBoundMs?: number;
}

/** How a read is made: eventually consistent unless asked otherwise, bounded by the request's deadline. */
export interface ReadOptions {
  /** A strongly consistent read: twice the capacity, and always the latest write. */
  consistent?: boolean;
  deadline?: Deadline;
}

/**
 * A page Query sent before the request knew which generation is current (the speculation in
 * shared/http/middleware/authorize.ts):
 * what it asked for, and what came back. It never rejects; a failure is kept for whoever uses it.
 */
export interface Prefetched {
  team: TeamState;
  resource: ListResource;
  ordinals: Ordinals;
  result: { items: string[] } | { error: unknown };
}

/**
 * The read side of the store: everything the three functions ask of DynamoDB. Only GetItem-family
 * reads and Query: never Scan, never a write.
 *
 * Reads are eventually consistent (half the capacity of a strong read) unless a caller asks
 * otherwise. That is safe for the page Query because a generation's items never change once
 * the head names it: the only possible error is to miss some, and the head says how many the page
 * must hold (readPage). For the token and the head it means AWS may answer from a replica up to
 * about a second behind (README "Eventual consistency").
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

  /** A list's first read: the token and the team head together, in one BatchGetItem. */
  async readAccess(tokenHash: string, teamSegment: string, options: ReadOptions = {}): Promise<{ token?: StoredToken; head?: TeamHead }> {
    const { token, team } = await this.readTokenAnd(tokenHash, teamKeyForSegment(teamSegment, 'head'), options);
    return { token, head: team && toTeamHead(team) };
  }

  /** A finances request's one read: the token and the team's finance item, in one BatchGetItem. */
  async readFinanceAccess(tokenHash: string, teamSegment: string, options: ReadOptions = {}): Promise<{ token?: StoredToken; finance?: TeamFinance }> {
    const { token, team } = await this.readTokenAnd(tokenHash, teamKeyForSegment(teamSegment, 'finance'), options);
    return { token, finance: team && toTeamFinance(team) };
  }

  /**
   * A page Query on a generation the caller only expects to be current, sent alongside the
   * BatchGetItem that will tell. Eventually consistent; settles with the items or the error.
   */
  prefetchPage(team: TeamState, resource: ListResource, ordinals: Ordinals, deadline?: Deadline): Promise<Prefetched> {
    const prefetched = (result: Prefetched['result']): Prefetched => ({ team, resource, ordinals, result });
    return this.queryPage(team, resource, ordinals, { deadline }).then(
      (items) => prefetched({ items }),
      (error: unknown) => prefetched({ error }),
    );
  }

  /**
   * The page's items, by ordinal range, in one Query, eventually consistent; each item's JSON.
   * A prefetched page of the same generation and range is used instead of a new Query. The head
   * promised every ordinal from `first` to `last`: a page that holds fewer (a replica behind the
   * import that wrote the generation) is read again strongly consistent, once, and still short
   * it is refused (ShortPage: a 503), never served.
   */
  async readPage(head: TeamHead, resource: ListResource, ordinals: Ordinals, options: { deadline?: Deadline; prefetched?: Prefetched } = {}): Promise<string[]> {
    const expected = ordinals.last - ordinals.first + 1;
    const prefetched = options.prefetched;
    let items: string[];
    if (prefetched && samePage(prefetched, head, resource, ordinals)) {
      if ('error' in prefetched.result) throw prefetched.result.error;
      items = prefetched.result.items;
    } else {
      items = await this.queryPage(head, resource, ordinals, { deadline: options.deadline });
    }
    if (items.length !== expected) items = await this.queryPage(head, resource, ordinals, { consistent: true, deadline: options.deadline });
    if (items.length !== expected) throw new ShortPage(expected, items.length);
    return items;
  }

  private async queryPage(team: TeamState, resource: ListResource, { first, last }: Ordinals, options: ReadOptions): Promise<string[]> {
    const json: string[] = [];
    let startKey: RawItem | undefined;
    do {
      const result = await this.client.send(
        new QueryCommand({
          TableName: this.options.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :first AND :last',
          ExpressionAttributeValues: {
            ':pk': { S: resourcePartition(team.teamId, team.generation, resource) },
            ':first': { S: ordinalKey(first) },
            ':last': { S: ordinalKey(last) },
          },
          ProjectionExpression: 'j',
          ConsistentRead: options.consistent === true,
          ExclusiveStartKey: startKey,
          ReturnConsumedCapacity: this.options.observe ? 'TOTAL' : undefined,
        }),
        { abortSignal: options.deadline?.signalFor(this.options.callBoundMs) },
      );
      for (const item of result.Items ?? []) json.push(item.j?.S as string);
      this.report('Query', result.ConsumedCapacity?.CapacityUnits, result.Items?.length ?? 0, options.consistent === true);
      startKey = result.LastEvaluatedKey;
    } while (startKey);
    return json;
  }

  private async readTokenAnd(tokenHash: string, teamKey: Key | undefined, options: ReadOptions): Promise<{ token?: StoredToken; team?: RawItem }> {
    const keys: Key[] = [tokenKey(tokenHash), ...(teamKey ? [teamKey] : [])];
    const items = await this.batchGet(keys, options);
    const tokenItem = items.find((item) => item.pk?.S === keys[0]!.pk);
    const teamItem = teamKey && items.find((item) => item.pk?.S === teamKey.pk);
    return { token: tokenItem && toStoredToken(tokenItem), team: teamItem };
  }

  private async batchGet(keys: Key[], options: ReadOptions): Promise<RawItem[]> {
    const items: RawItem[] = [];
    const table = this.options.tableName;
    const consistent = options.consistent === true;
    const requested = keys.map((key): RawItem => ({ pk: { S: key.pk }, sk: { S: key.sk } }));
    await untilProcessed('BatchGetItem', requested, async (pending) => {
      const result = await this.client.send(
        new BatchGetItemCommand({
          RequestItems: { [table]: { Keys: pending, ConsistentRead: consistent } },
          ReturnConsumedCapacity: this.options.observe ? 'TOTAL' : undefined,
        }),
        { abortSignal: options.deadline?.signalFor(this.options.callBoundMs) },
      );
      const found = result.Responses?.[table] ?? [];
      items.push(...found);
      this.report('BatchGetItem', result.ConsumedCapacity?.[0]?.CapacityUnits, found.length, consistent);
      return result.UnprocessedKeys?.[table]?.Keys ?? [];
    }, { budget: 'request', signal: options.deadline && (() => options.deadline!.signal()) });
    return items;
  }

  private report(operation: CallReport['operation'], readCapacity: number | undefined, items: number, consistent: boolean) {
    this.options.observe?.({ operation, readCapacity: readCapacity ?? 0, items, consistent });
  }
}

/** Whether a prefetched Query asked for exactly the page this head says to read. */
export function samePage(prefetched: Prefetched, head: TeamHead, resource: ListResource, ordinals: Ordinals): boolean {
  return prefetched.team.teamId === head.teamId && prefetched.team.generation === head.generation && prefetched.resource === resource
    && prefetched.ordinals.first === ordinals.first && prefetched.ordinals.last === ordinals.last;
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
    sanctumId: number(item.sanctum_id),
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
