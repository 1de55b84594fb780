import { BatchGetItemCommand, QueryCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { ListResource } from '../domain/resources.ts';
import { ordinalKey, resourcePartition, teamHeadKeyForSegment, tokenKey, type Key } from './keys.ts';
import { untilProcessed } from './retry.ts';

/** An item as DynamoDB's wire format has it. */
type RawItem = Record<string, AttributeValue>;

/** What a request needs to know about its team, from the team's head item. */
export interface TeamHead {
  teamId: number;
  slug: string;
  generation: string;
  counts: Record<ListResource, number>;
  /** The finance response's leading fields as JSON text (see domain/finance.ts). */
  financeJson: string;
  members: ReadonlySet<number>;
}

export interface StoredToken {
  userId: number;
  abilities: string[];
  expiresAt: string | null;
  revokedAt: string | null;
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

  /** Round trip 1: the token and the team head together, in one BatchGetItem. */
  async readAccess(tokenHash: string, teamSegment: string, signal?: AbortSignal): Promise<{ token?: StoredToken; head?: TeamHead }> {
    const headKey = teamHeadKeyForSegment(teamSegment);
    const keys: Key[] = [tokenKey(tokenHash), ...(headKey ? [headKey] : [])];
    const items = await this.batchGet(keys, signal);
    const tokenItem = items.find((item) => item.pk?.S === keys[0]!.pk);
    const headItem = headKey && items.find((item) => item.pk?.S === headKey.pk);
    return {
      token: tokenItem && toStoredToken(tokenItem),
      head: headItem && toTeamHead(headItem),
    };
  }

  /** Round trip 2: the page's items, by ordinal range, in one Query. Returns each item's JSON. */
  async readPage(head: TeamHead, resource: ListResource, first: number, last: number, signal?: AbortSignal): Promise<string[]> {
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
// numbers as N, strings as S, `null` as NULL, string arrays as L, number sets as NS. Read back
// exactly as the document client would (an absent or NULL attribute is undefined).

const string = (value: AttributeValue | undefined): string | undefined => value?.S;
const number = (value: AttributeValue | undefined): number | undefined => (value?.N === undefined ? undefined : Number(value.N));

function toStoredToken(item: RawItem): StoredToken {
  return {
    userId: Number(number(item.user_id)),
    abilities: item.abilities?.L?.map((ability) => ability.S as string) ?? [],
    expiresAt: string(item.expires_at) ?? null,
    revokedAt: string(item.revoked_at) ?? null,
  };
}

/** A head without a generation belongs to a team whose first import has not switched yet. */
function toTeamHead(item: RawItem): TeamHead | undefined {
  const generation = string(item.generation);
  if (generation === undefined) return undefined;
  return {
    teamId: Number(number(item.team_id)),
    slug: String(string(item.slug)),
    generation,
    counts: { projects: number(item.projects) ?? 0, daemons: number(item.daemons) ?? 0 },
    financeJson: String(string(item.finance)),
    members: new Set(item.members?.NS?.map(Number)),
  };
}
