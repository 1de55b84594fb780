import { CreateTableCommand, DescribeTableCommand, ResourceNotFoundException, type CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

import { KEY_SCHEMA } from '../../shared/store/keys.ts';

/** The one table: string `pk`/`sk`, on-demand, as the CDK stack declares it. */

function tableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    AttributeDefinitions: [
      { AttributeName: KEY_SCHEMA.partitionKey, AttributeType: 'S' },
      { AttributeName: KEY_SCHEMA.sortKey, AttributeType: 'S' },
    ],
    KeySchema: [
      { AttributeName: KEY_SCHEMA.partitionKey, KeyType: 'HASH' },
      { AttributeName: KEY_SCHEMA.sortKey, KeyType: 'RANGE' },
    ],
    BillingMode: 'PAY_PER_REQUEST',
  };
}

/** Creates the table unless it exists, and waits until it is active. Returns whether it created it. */
export async function ensureTable(doc: DynamoDBDocumentClient, tableName: string): Promise<boolean> {
  let created = false;
  try {
    await doc.send(new DescribeTableCommand({ TableName: tableName }));
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
    await doc.send(new CreateTableCommand(tableDefinition(tableName)));
    created = true;
  }
  for (let i = 0; i < 120; i++) {
    const { Table } = await doc.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === 'ACTIVE') return created;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`table ${tableName} did not become active`);
}
