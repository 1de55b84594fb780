import { readFileSync } from 'node:fs';
import { CreateTableCommand, DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDynamoDbLocal, type DynamoDbLocal } from '../../commands/local/dynamodb-local.ts';
import { processTree } from '../support/processes.ts';

/**
 * The DynamoDB Local that npm start and invoke start, kept to this machine. Java listens on every
 * interface (it has no option to bind one), so each run's data lives in a random region: DynamoDB
 * Local keeps a database per access key and region. Checked on this machine alone: whatever credentials another
 * host or a web page would try see no table, and no page may read an answer (CORS).
 */
let dynamo: DynamoDbLocal;
beforeAll(async () => {
  // Java on the quick compiler alone, as the suite's own DynamoDB Local (test/support/global-setup.ts
  // says why): this file's process is its own, and its Java the only one it starts.
  process.env.JAVA_TOOL_OPTIONS = '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC';
  dynamo = await startDynamoDbLocal();
}, 180_000);
afterAll(async () => dynamo?.stop());

const client = (region: string, accessKeyId = 'local') =>
  new DynamoDBClient({ endpoint: dynamo.endpoint, region, credentials: { accessKeyId, secretAccessKey: 'x' } });

describe('a DynamoDB Local started by the commands', () => {
  it("shows its tables only to a client that holds the run's region", async () => {
    await client(dynamo.region).send(
      new CreateTableCommand({
        TableName: 'private',
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      }),
    );
    expect((await client(dynamo.region).send(new ListTablesCommand({}))).TableNames).toEqual(['private']);
    for (const [region, key] of [
      ['local', 'local'],
      ['us-east-1', 'AKIDEXAMPLE'],
      ['eu-west-1', 'fakeMyKeyId'],
      [dynamo.region, 'other'],
    ] as const) {
      expect((await client(region, key).send(new ListTablesCommand({}))).TableNames, `${region} ${key}`).toEqual([]);
    }
  });

  it('runs Java with -disableTelemetry and no -sharedDb', () => {
    const java = processTree(process.pid).find(
      (p) => p.command.includes('DynamoDBLocal.jar') && p.command.includes(`-port ${new URL(dynamo.endpoint).port}`),
    );
    expect(java?.command).toContain('-disableTelemetry');
    expect(java?.command).not.toContain('-sharedDb');
    expect(readFileSync(`/proc/${java!.pid}/cmdline`, 'utf8')).toContain('-inMemory');
  });

  it('allows no web page to read it: a preflight from any origin is not granted', async () => {
    const res = await fetch(dynamo.endpoint, {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://evil.example',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization,content-type,x-amz-target',
      },
    });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});
