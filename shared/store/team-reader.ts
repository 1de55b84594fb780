import { BatchGetCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ListResource } from '../domain/resources.ts';
import { ordinalKey, resourcePartition, teamHeadKeyForSegment, tokenKey, type Key } from './keys.ts';

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
 */
export class TeamReader {
  private readonly doc: DynamoDBDocumentClient;
  private readonly options: ReaderOptions;

  constructor(doc: DynamoDBDocumentClient, options: ReaderOptions) {
    this.doc = doc;
    this.options = options;
  }

  /** Round trip 1: the token and the team head together, in one BatchGetItem. */
  async readAccess(tokenHash: string, teamSegment: string, signal?: AbortSignal): Promise<{ token?: StoredToken; head?: TeamHead }> {
    const headKey = teamHeadKeyForSegment(teamSegment);
    const keys: Key[] = [tokenKey(tokenHash), ...(headKey ? [headKey] : [])];
    const items = await this.batchGet(keys, signal);
    const tokenItem = items.find((item) => item.pk === keys[0]!.pk);
    const headItem = headKey && items.find((item) => item.pk === headKey.pk);
    return {
      token: tokenItem && toStoredToken(tokenItem),
      head: headItem && toTeamHead(headItem),
    };
  }

  /** Round trip 2: the page's items, by ordinal range, in one Query. Returns each item's JSON. */
  async readPage(head: TeamHead, resource: ListResource, first: number, last: number, signal?: AbortSignal): Promise<string[]> {
    const json: string[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const result = await this.doc.send(
        new QueryCommand({
          TableName: this.options.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :first AND :last',
          ExpressionAttributeValues: {
            ':pk': resourcePartition(head.teamId, head.generation, resource),
            ':first': ordinalKey(first),
            ':last': ordinalKey(last),
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
      for (const item of result.Items ?? []) json.push(item.j as string);
      this.report('Query', result.ConsumedCapacity?.CapacityUnits, result.Items?.length ?? 0);
      startKey = result.LastEvaluatedKey;
    } while (startKey);
    return json;
  }

  private async batchGet(keys: Key[], signal?: AbortSignal): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let pending: Key[] = keys;
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 0) await sleep(Math.min(25 * 2 ** attempt, 400) * Math.random());
      const result = await this.doc.send(
        new BatchGetCommand({
          RequestItems: { [this.options.tableName]: { Keys: pending } },
          ReturnConsumedCapacity: this.options.observe ? 'TOTAL' : undefined,
        }),
        { abortSignal: signal },
      );
      const found = result.Responses?.[this.options.tableName] ?? [];
      items.push(...found);
      this.report('BatchGetItem', result.ConsumedCapacity?.[0]?.CapacityUnits, found.length);
      // Unprocessed keys come back under throttling: retried with backoff, never dropped.
      pending = (result.UnprocessedKeys?.[this.options.tableName]?.Keys as Key[] | undefined) ?? [];
      if (attempt >= 5 && pending.length > 0) throw Object.assign(new Error('BatchGetItem left keys unprocessed'), { name: 'ThrottlingException' });
    }
    return items;
  }

  private report(operation: CallReport['operation'], readCapacity: number | undefined, items: number) {
    this.options.observe?.({ operation, readCapacity: readCapacity ?? 0, items });
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function toStoredToken(item: Record<string, unknown>): StoredToken {
  return {
    userId: Number(item.user_id),
    abilities: (item.abilities as string[] | undefined) ?? [],
    expiresAt: (item.expires_at as string | undefined) ?? null,
    revokedAt: (item.revoked_at as string | undefined) ?? null,
  };
}

/** A head without a generation belongs to a team whose first import has not switched yet. */
function toTeamHead(item: Record<string, unknown>): TeamHead | undefined {
  if (typeof item.generation !== 'string') return undefined;
  return {
    teamId: Number(item.team_id),
    slug: String(item.slug),
    generation: item.generation,
    counts: { projects: Number(item.projects ?? 0), daemons: Number(item.daemons ?? 0) },
    financeJson: String(item.finance),
    members: (item.members as Set<number> | undefined) ?? new Set(),
  };
}
