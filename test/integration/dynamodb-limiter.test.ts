import {
  BatchGetItemCommand,
  BatchWriteItemCommand,
  DescribeTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
  type AttributeValue,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, inject, it, vi } from 'vitest';
import { writeAll } from '../../shared/write/batch-write.ts';
import { createDynamoDbClient } from '../../shared/table/dynamodb-client.ts';
import { scanAll, type TestTable } from '../support/dynamodb.ts';
import { limitedDynamoDb, manualClock } from '../support/limited-dynamodb.ts';

/**
 * docs/testing.md, "DynamoDB's limits, locally": the limiter in front of the suite's DynamoDB Local
 * (commands/local/dynamodb-limiter.ts) refuses what DynamoDB would refuse, as DynamoDB answers, and
 * costs what DynamoDB would charge. Most cases hold the limiter's clock still, so that a burst is
 * judged in one instant however slowly this shared machine sends it; the batch writer's case runs
 * on real time and asserts only that DynamoDB's limit makes it no faster.
 */
const clock = manualClock();
const still = limitedDynamoDb({ clock: clock.now });
/** One read unit a second per key, and the exception of a provisioned table. */
const tight = limitedDynamoDb({
  clock: clock.now,
  readUnitsPerPartitionKey: 1,
  throttlingException: 'ProvisionedThroughputExceededException',
});
const live = limitedDynamoDb();

const REGION = process.env.AWS_REGION ?? 'local';
/**
 * A client that makes one attempt, so that a throttled request is seen as it was answered; a burst
 * waits for a socket of the client's pool longer than the functions' half-second connection limit.
 */
const once = (endpoint: string) =>
  createDynamoDbClient({ endpoint, maxAttempts: 1, requestTimeoutMs: 30_000, connectionTimeoutMs: 30_000 });
/** DynamoDB Local itself, unlimited, to see what was written. */
const direct = () =>
  DynamoDBDocumentClient.from(
    createDynamoDbClient({ endpoint: inject('dynamodbEndpoint'), maxAttempts: 5, requestTimeoutMs: 30_000 }),
  );

const S = (text: string): AttributeValue => ({ S: text });
/** An item of exactly `bytes` bytes as DynamoDB counts them (names and ASCII values). */
function item(pk: string, sk: string, bytes = 20): Record<string, AttributeValue> {
  const rest = bytes - ('pk'.length + pk.length + 'sk'.length + sk.length + 'v'.length);
  return { pk: S(pk), sk: S(sk), v: S('x'.repeat(rest)) };
}
/** Spends `units` WCU of a key, with puts of items well under DynamoDB's largest (400 KB). */
async function spend(client: DynamoDBClient, table: TestTable, pk: string, units: number) {
  for (let i = 0; units > 0; i++, units -= 250) {
    const Item = item(pk, `spend-${i}`, Math.min(units, 250) * 1_024);
    await client.send(new PutItemCommand({ TableName: table.tableName, Item }));
  }
}
const outcome = (promise: Promise<unknown>) =>
  promise.then(
    () => 'ok',
    (error: Error) => error.name,
  );
/** The error a request failed with (a request that succeeds fails the test). */
const failure = (promise: Promise<unknown>): Promise<Record<string, any>> =>
  promise.then(
    () => {
      throw new Error('the request was expected to fail');
    },
    (error: unknown) => error as Record<string, any>,
  );
const tally = (outcomes: string[]) => {
  const counts: Record<string, number> = {};
  for (const name of outcomes) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
};

describe('per partition key value and per second', () => {
  it('refuses writes to one key past 1,000 WCU in a second, while another key is served', async () => {
    const table = await still.table();
    const client = once(still.endpoint);
    const put = (pk: string, i: number) =>
      outcome(client.send(new PutItemCommand({ TableName: table.tableName, Item: item(pk, String(i)) })));
    const hot = await Promise.all(Array.from({ length: 1_200 }, (_, i) => put('hot', i)));
    const cold = await Promise.all(Array.from({ length: 100 }, (_, i) => put('cold', i)));
    expect(tally(hot)).toEqual({ ok: 1_000, ThrottlingException: 200 });
    expect(tally(cold)).toEqual({ ok: 100 });
    // A second later the key has its 1,000 WCU again, and no more.
    clock.advance(1_000);
    const next = await Promise.all(Array.from({ length: 1_001 }, (_, i) => put('hot', 2_000 + i)));
    expect(tally(next)).toEqual({ ok: 1_000, ThrottlingException: 1 });
    const { partitions } = still.stats().tables[table.tableName]!;
    expect(partitions.hot).toEqual({ writeUnits: 2_000, readUnits: 0, throttled: 201 });
    expect(partitions.cold).toEqual({ writeUnits: 100, readUnits: 0, throttled: 0 });
    expect(await scanAll({ ...table, doc: direct() })).toHaveLength(2_100);
  });

  it('answers as DynamoDB does for an on-demand table: 400, ThrottlingException, key range and table', async () => {
    const table = await still.table();
    const client = once(still.endpoint);
    await spend(client, table, 'full', 1_000);
    const error = await failure(
      client.send(new PutItemCommand({ TableName: table.tableName, Item: item('full', 'one-more') })),
    );
    expect(error.name).toBe('ThrottlingException');
    expect(error.$metadata.httpStatusCode).toBe(400);
    expect(error.message).toMatch(/^Throughput exceeds the current capacity of your table or index\./);
    expect(error.throttlingReasons).toEqual([
      { reason: 'TableWriteKeyRangeThroughputExceeded', resource: expect.stringMatching(`:table/${table.tableName}$`) },
    ]);
    // The control plane is not limited.
    await expect(client.send(new DescribeTableCommand({ TableName: table.tableName }))).resolves.toBeDefined();
  });
});

describe('costs as DynamoDB counts them', () => {
  it('a 4 KB item costs 4 WCU, a byte more 5; ConsumedCapacity only when the client asks', async () => {
    const table = await still.table();
    const client = once(still.endpoint);
    const asked = await client.send(
      new PutItemCommand({ TableName: table.tableName, Item: item('k4', '1', 4_096), ReturnConsumedCapacity: 'TOTAL' }),
    );
    expect(asked.ConsumedCapacity).toEqual({ TableName: table.tableName, CapacityUnits: 4 });
    const unasked = await client.send(new PutItemCommand({ TableName: table.tableName, Item: item('k5', '1', 4_097) }));
    expect(unasked.ConsumedCapacity).toBeUndefined();
    const { partitions } = still.stats().tables[table.tableName]!;
    expect([partitions.k4!.writeUnits, partitions.k5!.writeUnits]).toEqual([4, 5]);
  });

  it('a transaction costs twice its writes, and one a key cannot take is cancelled whole', async () => {
    const table = await still.table();
    const client = once(still.endpoint);
    const put = (pk: string, sk: string) => ({ Put: { TableName: table.tableName, Item: item(pk, sk, 1_000) } });
    await client.send(new TransactWriteItemsCommand({ TransactItems: [put('tx', '1'), put('tx', '2')] }));
    expect(still.stats().tables[table.tableName]!.partitions.tx!.writeUnits).toBe(4);

    await spend(client, table, 'full', 1_000);
    const error = await failure(
      client.send(new TransactWriteItemsCommand({ TransactItems: [put('free', '1'), put('full', '1')] })),
    );
    expect(error.name).toBe('TransactionCanceledException');
    expect(error.CancellationReasons).toEqual([
      { Code: 'None' },
      { Code: 'ThrottlingError', Message: expect.stringMatching(/^Throughput exceeds/) },
    ]);
    const free = await client.send(
      new GetItemCommand({ TableName: table.tableName, Key: { pk: S('free'), sk: S('1') } }),
    );
    expect(free.Item).toBeUndefined();
  });

  it('an eventually consistent Query of 20 small items costs 0.5 RCU, a strongly consistent one 1', async () => {
    const table = await still.table();
    await writeAll(
      table.doc,
      table.tableName,
      Array.from({ length: 20 }, (_, i) => ({ PutRequest: { Item: { pk: 'page', sk: String(i).padStart(4, '0') } } })),
    );
    const client = once(still.endpoint);
    const query = (ConsistentRead: boolean) =>
      client.send(
        new QueryCommand({
          TableName: table.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': S('page') },
          ConsistentRead,
        }),
      );
    const readUnits = () => still.stats().tables[table.tableName]!.partitions.page!.readUnits;
    const eventual = await query(false);
    expect(eventual.Count).toBe(20);
    expect(eventual.ConsumedCapacity).toBeUndefined();
    expect(readUnits()).toBe(0.5);
    await query(true);
    expect(readUnits()).toBe(1.5);
  });
});

describe('batches', () => {
  it('BatchWriteItem writes what fits, returns the rest as UnprocessedItems; none fitting: the exception', async () => {
    const table = await still.table();
    const client = once(still.endpoint);
    await spend(client, table, 'batch', 990);
    const requests: WriteRequest[] = Array.from({ length: 25 }, (_, i) => ({
      PutRequest: { Item: item('batch', `item-${String(i).padStart(2, '0')}`) },
    }));
    const first = await client.send(new BatchWriteItemCommand({ RequestItems: { [table.tableName]: requests } }));
    expect(first.UnprocessedItems).toEqual({ [table.tableName]: requests.slice(10) });
    const none = await outcome(
      client.send(new BatchWriteItemCommand({ RequestItems: { [table.tableName]: requests.slice(10) } })),
    );
    expect(none).toBe('ThrottlingException');
    clock.advance(1_000);
    const again = await client.send(new BatchWriteItemCommand({ RequestItems: first.UnprocessedItems }));
    expect(again.UnprocessedItems).toEqual({});
    const written = (await scanAll({ ...table, doc: direct() })).filter((i) => String(i.sk).startsWith('item-'));
    expect(written).toHaveLength(25);
  });

  it('BatchGetItem reads what fits and returns the rest as UnprocessedKeys', async () => {
    const table = await tight.table();
    const client = once(tight.endpoint);
    await client.send(new PutItemCommand({ TableName: table.tableName, Item: item('r', '1') }));
    const Keys = ['1', '2', '3'].map((sk) => ({ pk: S('r'), sk: S(sk) }));
    const answer = await client.send(new BatchGetItemCommand({ RequestItems: { [table.tableName]: { Keys } } }));
    // One read unit a second: two eventually consistent reads of small items, the third left.
    expect(answer.Responses?.[table.tableName]).toEqual([item('r', '1')]);
    expect(answer.UnprocessedKeys).toEqual({ [table.tableName]: { Keys: [Keys[2]] } });
  });
});

describe("the SDK's default retry strategy", () => {
  it.each([
    ['ProvisionedThroughputExceededException', () => tight, 'read'],
    ['ThrottlingException', () => still, 'write'],
  ] as const)('retries %s until the key has capacity again', async (exception, limiter, kind) => {
    const table = await limiter().table();
    const Key = { pk: S('retry'), sk: S('1') };
    const request = (client: DynamoDBClient) =>
      kind === 'read'
        ? client.send(new GetItemCommand({ TableName: table.tableName, Key, ConsistentRead: true }))
        : client.send(new PutItemCommand({ TableName: table.tableName, Item: item('retry', '2') }));
    // Spend the key's units, in an instant that does not pass until the test moves it: half its one
    // read unit (an eventually consistent read), or its 1,000 write units.
    if (kind === 'read') await table.client.send(new GetItemCommand({ TableName: table.tableName, Key }));
    else await spend(once(limiter().endpoint), table, 'retry', 1_000);
    expect(await outcome(request(once(limiter().endpoint)))).toBe(exception);

    const throttled = () => limiter().stats().tables[table.tableName]!.partitions.retry!.throttled;
    const before = throttled();
    const sdk = new DynamoDBClient({
      endpoint: limiter().endpoint,
      region: REGION,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const answer = request(sdk);
    // Once its first attempt has been refused, the clock moves a second: the SDK's next attempt finds room.
    await vi.waitFor(() => expect(throttled()).toBeGreaterThan(before), { timeout: 10_000, interval: 5 });
    clock.advance(1_000);
    const { $metadata } = await answer;
    expect($metadata.httpStatusCode).toBe(200);
    expect($metadata.attempts).toBeGreaterThanOrEqual(2);
    sdk.destroy();
  });
});

describe("the project's batch writer against DynamoDB's limits", () => {
  it('writes 5,000 small items to one key no faster than 1,000 WCU a second, and every one arrives', async () => {
    const table = await live.table();
    const requests = Array.from({ length: 5_000 }, (_, i) => ({
      PutRequest: { Item: { pk: 'one-key', sk: String(i).padStart(5, '0') } },
    }));
    const started = performance.now();
    await writeAll(table.doc, table.tableName, requests);
    const seconds = (performance.now() - started) / 1_000;
    // The key starts with one second's 1,000 WCU and earns 1,000 more a second: 4 s at the least.
    expect(seconds).toBeGreaterThanOrEqual(4);
    expect(await scanAll({ ...table, doc: direct() })).toHaveLength(5_000);
    // Whether any request was refused depends on how fast this machine sends them: not asserted.
    expect(live.stats().tables[table.tableName]!.partitions['one-key']!.writeUnits).toBe(5_000);
  }, 120_000);
});
