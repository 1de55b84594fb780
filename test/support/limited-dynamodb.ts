import { afterAll, beforeAll, inject } from 'vitest';
import { databaseClient } from '../../commands/cli/database.ts';
import {
  startDynamoDbLimiter,
  type DynamoDbLimiter,
  type DynamoDbLimiterOptions,
} from '../../commands/local/dynamodb-limiter.ts';
import { freshTable, type TestTable } from './dynamodb.ts';

/**
 * DynamoDB's throughput limits in front of the suite's DynamoDB Local, which applies none
 * (commands/local/dynamodb-limiter.ts; docs/testing.md, "DynamoDB's limits, locally"): started
 * before this file's tests, stopped after them. Call it at the top of a test file, once per set of
 * options. `table()` makes a new table whose clients go through the limiter.
 */
export function limitedDynamoDb(options: Omit<DynamoDbLimiterOptions, 'target'> = {}) {
  let limiter: DynamoDbLimiter | undefined;
  beforeAll(async () => {
    limiter = await startDynamoDbLimiter({ ...options, target: inject('dynamodbEndpoint') });
  });
  afterAll(async () => {
    await limiter?.stop();
  });
  const started = () => {
    if (!limiter) throw new Error('the limiter starts in beforeAll: use it in a test or a later hook');
    return limiter;
  };
  return {
    get endpoint() {
      return started().endpoint;
    },
    stats: () => started().stats(),
    reset: () => started().reset(),
    /** A new, empty table (freshTable) whose clients call the limiter. */
    table: (): Promise<TestTable> => freshTable(started().endpoint),
  };
}

/**
 * A clock for the limiter that moves only when the test moves it (milliseconds): a burst is then
 * judged in one instant, however slowly a loaded machine sends it.
 */
export function manualClock() {
  let now = 0;
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

/**
 * A table through the commands' own DynamoDB clients (commands/cli/database.ts, as `npm run import`
 * and `npm run sync` make them: standard retries, and adaptive ones for long streams of writes to
 * one key) at `endpoint`: a limiter's, to see the writers keep going under DynamoDB's limits.
 */
export function throughCommandClients(table: TestTable, endpoint: string): TestTable {
  const saved = { DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT, TABLE_NAME: process.env.TABLE_NAME };
  process.env.DYNAMODB_ENDPOINT = endpoint;
  process.env.TABLE_NAME = table.tableName;
  try {
    const { doc, bulk } = databaseClient();
    return { ...table, endpoint, doc, bulk };
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}
