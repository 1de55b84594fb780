import { describe, expect, it } from 'vitest';
import { CapacityLedger, type Demand } from '../../commands/local/capacity-ledger.ts';
import { itemSize, readUnits, writeUnits, type WireItem } from '../../commands/local/capacity-units.ts';
import { planFor, queryPartition, share, type TableInfo } from '../../commands/local/limited-operations.ts';
import { throttled, transactionThrottled } from '../../commands/local/throttling-answers.ts';

/**
 * The DynamoDB limiter's accounting (commands/local/capacity-*.ts, limited-operations.ts), without
 * a network: sizes and units as DynamoDB's developer guide counts them, token buckets on a clock the
 * test moves, what each request asks and costs, and the answers a throttled request gets.
 */

/** A clock the test moves by hand, in milliseconds. */
function manualClock() {
  let now = 0;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

const RATES = { partitionWrite: 1_000, partitionRead: 3_000, tableWrite: 4_000, tableRead: 12_000 };
const write = (partition: string | undefined, units = 1, table = 't'): Demand => ({ table, partition, units });
const TABLE: TableInfo = {
  name: 't',
  arn: 'arn:aws:dynamodb:ddblocal:000000000000:table/t',
  partitionKey: 'pk',
  sortKey: 'sk',
  onDemand: true,
};
const TABLES = new Map([['t', TABLE]]);
const S = (text: string) => ({ S: text });

describe('item sizes, as DynamoDB counts them', () => {
  it.each<[string, WireItem, number]>([
    ['a string: its name and its UTF-8 bytes', { ab: S('héllo') }, 2 + 6],
    ['a number: 1 byte per two significant digits, plus 1', { n: { N: '12345' } }, 1 + 3 + 1],
    ['leading and trailing zeros are not significant', { n: { N: '-0.00120' } }, 1 + 1 + 1],
    ['a binary: its raw bytes, not its base64', { b: { B: Buffer.from('abcd').toString('base64') } }, 1 + 4],
    ['null and booleans: 1 byte', { a: { NULL: true }, b: { BOOL: false } }, 1 + 1 + 1 + 1],
    ['a set: the sum of its members', { s: { SS: ['ab', 'c'] } }, 1 + 3],
    ['a list: 3 bytes, and 1 more per element', { l: { L: [S('ab'), { N: '1' }] } }, 1 + 3 + (1 + 2) + (1 + 2)],
    ['a map: 3 bytes, and per element 1 more and its name', { m: { M: { k: S('v') } } }, 1 + 3 + (1 + 1 + 1)],
  ])('%s', (_, item, size) => {
    expect(itemSize(item)).toBe(size);
  });
});

describe('capacity units', () => {
  it.each([
    [1, 1],
    [1_024, 1],
    [1_025, 2],
    [4_096, 4],
    [0, 1],
  ])('a write of %i bytes costs %i WCU', (bytes, units) => {
    expect(writeUnits(bytes)).toBe(units);
  });

  it('a transactional write costs twice as much', () => {
    expect(writeUnits(4_096, true)).toBe(8);
  });

  it.each([
    [100, 'eventual', 0.5],
    [100, 'strong', 1],
    [100, 'transactional', 2],
    [4_097, 'eventual', 1],
    [0, 'strong', 1],
  ] as const)('a read of %i bytes, %s, costs %d RCU', (bytes, mode, units) => {
    expect(readUnits(bytes, mode)).toBe(units);
  });
});

describe('the ledger: token buckets per partition key value and per table', () => {
  it('admits 1,000 WCU to one key in a second, refuses the next, and admits it once time has refilled it', () => {
    const clock = manualClock();
    const ledger = new CapacityLedger(RATES, clock.now);
    const refusals = ledger.admit(
      'write',
      Array.from({ length: 1_001 }, () => write('hot')),
    );
    expect(refusals.filter(Boolean)).toEqual(['partition']);
    clock.advance(1);
    expect(ledger.admit('write', [write('hot')])).toEqual([undefined]);
    expect(ledger.admit('write', [write('hot')])).toEqual(['partition']);
  });

  it('keeps each partition key value apart, and never holds more than one second of refill', () => {
    const clock = manualClock();
    const ledger = new CapacityLedger(RATES, clock.now);
    ledger.admit('write', [write('hot', 1_000)]);
    expect(ledger.admit('write', [write('cold', 1_000)])).toEqual([undefined]);
    clock.advance(60_000);
    const burst = ledger.admit(
      'write',
      Array.from({ length: 1_500 }, () => write('hot')),
    );
    expect(burst.filter((refusal) => !refusal)).toHaveLength(1_000);
  });

  it("limits a table's writes to 4,000 WCU a second across its keys", () => {
    const ledger = new CapacityLedger(RATES, manualClock().now);
    const demands = Array.from({ length: 5 }, (_, i) => write(`key-${i}`, 1_000));
    expect(ledger.admit('write', demands)).toEqual([undefined, undefined, undefined, undefined, 'table']);
  });

  it('keeps reads and writes apart: 3,000 RCU on a key whose writes are spent', () => {
    const ledger = new CapacityLedger(RATES, manualClock().now);
    ledger.admit('write', [write('k', 1_000)]);
    expect(ledger.admit('read', [write('k', 3_000)])).toEqual([undefined]);
    expect(ledger.admit('read', [write('k', 0.5)])).toEqual(['partition']);
  });

  it('settles a demand at its real cost: more than estimated is a debt the next requests wait out', () => {
    const clock = manualClock();
    const ledger = new CapacityLedger(RATES, clock.now);
    const query = write('k', 0.5);
    ledger.admit('read', [query]);
    ledger.settle('read', query, 3_500);
    clock.advance(100);
    expect(ledger.admit('read', [write('k', 0.5)])).toEqual(['partition']);
    clock.advance(100);
    expect(ledger.admit('read', [write('k', 0.5)])).toEqual([undefined]);
    expect(ledger.stats().tables.t!.partitions.k!.readUnits).toBe(3_500);
  });

  it('gives back what a demand did not use', () => {
    const ledger = new CapacityLedger(RATES, manualClock().now);
    const put = write('k', 1_000);
    ledger.admit('write', [put]);
    ledger.settle('write', put, 0);
    expect(ledger.admit('write', [write('k', 1_000)])).toEqual([undefined]);
  });

  it('admits a transaction whole or not at all, naming the items that did not fit', () => {
    const ledger = new CapacityLedger(RATES, manualClock().now);
    ledger.admit('write', [write('full', 999)]);
    const refusals = ledger.admit('write', [write('free', 2), write('full', 2)], { atomic: true });
    expect(refusals).toEqual([undefined, 'partition']);
    // Nothing was taken from the free key: all 1,000 are still there.
    expect(ledger.admit('write', [write('free', 1_000)])).toEqual([undefined]);
  });

  it('judges the items of one transaction on one key together', () => {
    const ledger = new CapacityLedger(RATES, manualClock().now);
    ledger.admit('write', [write('k', 997)]);
    expect(ledger.admit('write', [write('k', 2), write('k', 2)], { atomic: true })).toEqual([undefined, 'partition']);
  });

  it('lets a demand larger than a whole bucket through when the bucket is full', () => {
    const ledger = new CapacityLedger({ ...RATES, partitionWrite: 10 }, manualClock().now);
    expect(ledger.admit('write', [write('k', 40)])).toEqual([undefined]);
  });

  it('counts units and refusals per table and per key, and forgets them on reset', () => {
    const ledger = new CapacityLedger(RATES, manualClock().now);
    const demands = [write('a', 600), write('a', 600), write('b', 1)];
    const refusals = ledger.admit('write', demands);
    for (const [i, demand] of demands.entries()) if (!refusals[i]) ledger.settle('write', demand, demand.units);
    ledger.throttledRequest('t');
    expect(ledger.stats()).toEqual({
      tables: {
        t: {
          writeUnits: 601,
          readUnits: 0,
          throttled: 1,
          throttledRequests: 1,
          partitions: {
            a: { writeUnits: 600, readUnits: 0, throttled: 1 },
            b: { writeUnits: 1, readUnits: 0, throttled: 0 },
          },
        },
      },
    });
    ledger.reset();
    expect(ledger.stats()).toEqual({ tables: {} });
    expect(ledger.admit('write', [write('a', 1_000)])).toEqual([undefined]);
  });
});

describe('what a request asks and costs', () => {
  it('estimates a put by its item and costs it at what DynamoDB Local consumed', () => {
    const plan = planFor(
      'PutItem',
      { TableName: 't', Item: { pk: S('a'), sk: S('1'), v: S('x'.repeat(4_000)) } },
      TABLES,
    );
    expect(plan.demands).toEqual([{ table: 't', partition: 'a', units: 4 }]);
    expect(plan.costs({ ConsumedCapacity: { TableName: 't', CapacityUnits: 5 } }, [true])).toEqual([5]);
  });

  it("finds a Query's partition in its key condition, however it is written", () => {
    const values = { ':v': S('team'), ':s': S('0') };
    expect(
      queryPartition({ KeyConditionExpression: 'pk = :v AND sk > :s', ExpressionAttributeValues: values }, 'pk'),
    ).toEqual(S('team'));
    expect(
      queryPartition(
        {
          KeyConditionExpression: '(#s >= :s) AND (:v=#p)',
          ExpressionAttributeNames: { '#p': 'pk', '#s': 'sk' },
          ExpressionAttributeValues: values,
        },
        'pk',
      ),
    ).toEqual(S('team'));
    expect(
      queryPartition({ KeyConditions: { pk: { ComparisonOperator: 'EQ', AttributeValueList: [S('x')] } } }, 'pk'),
    ).toEqual(S('x'));
  });

  it('costs a Query that read nothing a read all the same, and a Scan on its table alone', () => {
    const query = planFor(
      'Query',
      { TableName: 't', KeyConditionExpression: 'pk = :v', ExpressionAttributeValues: { ':v': S('a') } },
      TABLES,
    );
    expect(query.demands).toEqual([{ table: 't', partition: 'a', units: 0.5 }]);
    expect(query.costs({ ConsumedCapacity: { TableName: 't', CapacityUnits: 0 } }, [true])).toEqual([0.5]);
    const scan = planFor('Scan', { TableName: 't', ConsistentRead: true }, TABLES);
    expect(scan.demands).toEqual([{ table: 't', partition: undefined, units: 1 }]);
  });

  it('splits a BatchWriteItem per item, forwards the admitted ones and returns the rest unprocessed', () => {
    const put = (sk: string, size: number) => ({
      PutRequest: { Item: { pk: S('a'), sk: S(sk), v: S('x'.repeat(size)) } },
    });
    const remove = { DeleteRequest: { Key: { pk: S('b'), sk: S('1') } } };
    const plan = planFor('BatchWriteItem', { RequestItems: { t: [put('1', 10), put('2', 3_000), remove] } }, TABLES);
    expect(plan.demands.map((d) => [d.partition, d.units])).toEqual([
      ['a', 1],
      ['a', 3],
      ['b', 1],
    ]);
    expect(plan.forward([true, false, true])).toEqual({ RequestItems: { t: [put('1', 10), remove] } });
    expect(plan.unprocessed([false, true, false])).toEqual({ t: [put('2', 3_000)] });
    // The puts keep what their items cost; the delete is what is left of the table's figure.
    const answer = { UnprocessedItems: {}, ConsumedCapacity: [{ TableName: 't', CapacityUnits: 5 }] };
    expect(plan.costs(answer, [true, false, true])).toEqual([1, 0, 4]);
  });

  it('costs a BatchGetItem from the items it returned, a key that found nothing as a read', () => {
    const key = (pk: string) => ({ pk: S(pk), sk: S('1') });
    const plan = planFor('BatchGetItem', { RequestItems: { t: { Keys: [key('a'), key('b'), key('c')] } } }, TABLES);
    expect(plan.demands.map((d) => d.units)).toEqual([0.5, 0.5, 0.5]);
    const answer = {
      Responses: { t: [{ ...key('b'), v: S('x'.repeat(5_000)) }] },
      UnprocessedKeys: {},
      ConsumedCapacity: [{ TableName: 't', CapacityUnits: 1 }],
    };
    expect(plan.costs(answer, [true, true, false])).toEqual([0.5, 1, 0]);
    expect(plan.unprocessed([false, false, true])).toEqual({ t: { Keys: [key('c')] } });
  });

  it('charges a transaction twice, its puts by their items', () => {
    const plan = planFor(
      'TransactWriteItems',
      {
        TransactItems: [
          { Put: { TableName: 't', Item: { pk: S('a'), sk: S('1'), v: S('x'.repeat(1_500)) } } },
          { Update: { TableName: 't', Key: { pk: S('b'), sk: S('1') } } },
        ],
      },
      TABLES,
    );
    expect(plan.demands.map((d) => [d.partition, d.units])).toEqual([
      ['a', 4],
      ['b', 2],
    ]);
    expect(plan.costs({ ConsumedCapacity: [{ TableName: 't', CapacityUnits: 10 }] }, [true, true])).toEqual([4, 6]);
  });

  it('shares a figure among the items whose cost is unknown, each at least the least', () => {
    expect(share(10, [4, 1, 1], [true, false, false], 1)).toEqual([4, 3, 3]);
    expect(share(2, [4, 1], [true, false], 1)).toEqual([4, 1]);
    expect(share(undefined, [1, 2], [false, false], 1)).toEqual([1, 2]);
  });

  it('adds what a figure has beyond known costs, and never charges less than they tell', () => {
    expect(share(6, [1, 2], [true, true], 1)).toEqual([2, 4]);
    // DynamoDB Local's figure for two 1,000-byte puts in one transaction.
    expect(share(2, [2, 2], [true, true], 2)).toEqual([2, 2]);
  });
});

describe('the answers a throttled request gets, as AWS documents them', () => {
  const provisioned = { ...TABLE, onDemand: false };

  it('an on-demand table answers ThrottlingException, naming the key range and the table', () => {
    expect(throttled('write', 'partition', TABLE)).toEqual({
      status: 400,
      body: {
        __type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException',
        message: expect.stringMatching(/^Throughput exceeds the current capacity of your table or index\./),
        throttlingReasons: [{ reason: 'TableWriteKeyRangeThroughputExceeded', resource: TABLE.arn }],
      },
    });
  });

  it('a provisioned table, or a limiter told so, answers ProvisionedThroughputExceededException', () => {
    const expected = {
      __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
      message: expect.stringMatching(/^The level of configured provisioned throughput for the table was exceeded/),
    };
    expect(throttled('read', 'table', provisioned).body).toEqual({
      ...expected,
      ThrottlingReasons: [{ reason: 'TableReadProvisionedThroughputExceeded', resource: TABLE.arn }],
    });
    expect(throttled('read', 'partition', TABLE, 'ProvisionedThroughputExceededException').body).toEqual({
      ...expected,
      ThrottlingReasons: [{ reason: 'TableReadKeyRangeThroughputExceeded', resource: TABLE.arn }],
    });
  });

  it('a transaction is cancelled, with a reason per item in order', () => {
    const { status, body } = transactionThrottled([undefined, TABLE]);
    expect(status).toBe(400);
    expect(body).toEqual({
      __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
      message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [None, ThrottlingError]',
      CancellationReasons: [{ Code: 'None' }, { Code: 'ThrottlingError', Message: expect.any(String) }],
    });
  });
});
