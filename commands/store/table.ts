import {
  CreateTableCommand,
  ResourceInUseException,
  waitUntilTableExists,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { KEY_SCHEMA } from '../../shared/table/keys.ts';

/**
 * Creates the one table unless it exists (string `pk`/`sk`, on-demand, as the CDK stack declares
 * it), and waits until it is active with the SDK's waiter.
 */
export async function ensureTable(doc: DynamoDBDocumentClient, tableName: string): Promise<void> {
  const { partitionKey, sortKey } = KEY_SCHEMA;
  try {
    await doc.send(
      new CreateTableCommand({
        TableName: tableName,
        AttributeDefinitions: [
          { AttributeName: partitionKey, AttributeType: 'S' },
          { AttributeName: sortKey, AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: partitionKey, KeyType: 'HASH' },
          { AttributeName: sortKey, KeyType: 'RANGE' },
        ],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
  } catch (error) {
    // DynamoDB's answer when the table exists already.
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  // The document client sends DescribeTable as the plain client does.
  await waitUntilTableExists(
    { client: doc as unknown as DynamoDBClient, maxWaitTime: 60, minDelay: 1 },
    { TableName: tableName },
  );
}
