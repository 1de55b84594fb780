import { randomBytes } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { importLeaseKey } from '../../shared/table/keys.ts';
import { inject } from 'vitest';
import { createDynamoDbClient } from '../../shared/table/dynamodb-client.ts';
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
  /** The writers' client for long streams of writes to one key (shared/write/writer.ts), when a test gives one. */
  bulk?: DynamoDBDocumentClient;
}

/**
 * A new, empty table in the suite's DynamoDB Local, with clients that call `endpoint`: DynamoDB
 * Local itself, or a proxy in front of it (test/support/limited-dynamodb.ts).
 */
export async function freshTable(endpoint = inject('dynamodbEndpoint')): Promise<TestTable> {
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
  return importSnapshot(table.doc, table.tableName, result.snapshot, { bulk: table.bulk, ...options });
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

/** What `interceptedTable` stops an import with: from that call on, every call fails, as after a kill. */
export class Killed extends Error {
  constructor(operation: string) {
    super(`killed at ${operation}`);
  }
}

/**
 * The table through a client whose every call first passes `at(operation, n, input)` (n: that
 * operation's count so far, from 1; input: the call's input as the document client has it). `at` may
 * wait (a pause at a chosen call) or throw Killed (a kill there: that call and every later one fail,
 * so the import stops where it stands and its lease stays behind; `afterKill` then removes the lease,
 * as the next import's takeover would).
 */
export function interceptedTable(
  table: TestTable,
  at: (operation: string, n: number, input: Record<string, unknown>) => void | Promise<void>,
) {
  const client = createDynamoDbClient({ endpoint: table.endpoint, maxAttempts: 1, requestTimeoutMs: 30_000 });
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  const counts = new Map<string, number>();
  let killed: Killed | undefined;
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      const operation = String(context.commandName).replace(/Command$/, '');
      counts.set(operation, (counts.get(operation) ?? 0) + 1);
      if (killed) throw killed;
      try {
        await at(operation, counts.get(operation)!, args.input as Record<string, unknown>);
      } catch (error) {
        if (error instanceof Killed) killed = error;
        throw error;
      }
      return next(args);
    },
    { step: 'initialize', name: 'testIntercept' },
  );
  return {
    table: { ...table, client, doc } as TestTable,
    /**
     * As if the killed import's process were gone: its lease goes, and the locks of the teams it held
     * run out, so that the next writer takes them over at once (and is told it took them over from a
     * dead writer, as a writer on this machine is when the holder's pid is gone).
     */
    afterKill: async () => {
      await table.doc.send(new DeleteCommand({ TableName: table.tableName, Key: importLeaseKey() }));
      for (const item of await scanAll(table)) {
        if (!String(item.pk).startsWith('LOCK#')) continue;
        await table.doc.send(
          new UpdateCommand({
            TableName: table.tableName,
            Key: { pk: item.pk, sk: item.sk },
            UpdateExpression: 'SET expires_at = :gone',
            ExpressionAttributeValues: { ':gone': 0 },
          }),
        );
      }
    },
  };
}
