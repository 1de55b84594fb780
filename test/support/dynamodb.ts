import { randomBytes } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import { createDynamoDbClient } from '../../shared/store/dynamodb-client.ts';
import { importSnapshot, type ImportOptions } from '../../commands/import/importer.ts';
import { validateSnapshotFile } from '../../commands/import/validation.ts';
import { snapshotFile } from './validate.ts';
import { ensureTable } from '../../commands/store/table.ts';

export interface TestTable {
  endpoint: string;
  tableName: string;
  /** The plain client (what the functions' reader uses) and the document client on it. */
  client: DynamoDBClient;
  doc: DynamoDBDocumentClient;
}

/** A new, empty table in the suite's DynamoDB Local. */
export async function freshTable(): Promise<TestTable> {
  const endpoint = inject('dynamodbEndpoint');
  const tableName = `test-${randomBytes(6).toString('hex')}`;
  const client = createDynamoDbClient({ endpoint, maxAttempts: 5, requestTimeoutMs: 30_000 });
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  await ensureTable(doc, tableName);
  return { endpoint, tableName, client, doc };
}

/**
 * Validates and imports a snapshot document through a file, as `npm run import` does (both
 * passes stream the file); fails the test if it is invalid.
 */
export async function importDocument(table: TestTable, document: unknown, options?: ImportOptions) {
  const path = await snapshotFile(document);
  const result = await validateSnapshotFile(path);
  if (!result.ok) throw new Error(`test snapshot is invalid:\n${result.problems.join('\n')}`);
  return importSnapshot(table.doc, table.tableName, result.snapshot, options);
}

/** Every item of the table, raw (tests may scan; the API never does). */
export async function scanAll(table: TestTable): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await table.doc.send(new ScanCommand({ TableName: table.tableName, ExclusiveStartKey: startKey }));
    items.push(...((page.Items ?? []) as Record<string, unknown>[]));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}
