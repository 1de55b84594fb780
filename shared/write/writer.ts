import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { batchWriter, type WriteRequest, writeAll } from './batch-write.ts';
import type { TeamLocks } from './team-locks.ts';

/** A table and the client that reaches it. */
export interface TableRef {
  doc: DynamoDBDocumentClient;
  tableName: string;
  /**
   * A client of its own for the long streams of writes to one partition key (a list written whole
   * beside, a replaced generation swept), in the SDK's adaptive retry mode: its client-side rate
   * limiting is meant for a client that reaches one throttled resource, and would hold back the
   * writer's other requests if they shared it
   * (https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html).
   * Absent, `doc` is used.
   */
  bulk?: DynamoDBDocumentClient;
}

/** The table through the client for long streams of writes to one partition key. */
export const bulkRef = (table: TableRef): TableRef => ({ doc: table.bulk ?? table.doc, tableName: table.tableName });

/**
 * What a write goes through (apply.ts): the table, who is writing (the owner of its import's or
 * sync's lease: what it leaves in the ledger names it), the locks of the teams it holds (every write
 * of a team first checks its lock is still held, and every switch makes it a condition), the wall
 * clock that retention is measured by, and where a line worth saying goes.
 */
export interface Writer extends TableRef {
  owner: string;
  locks: TeamLocks;
  /** Wall-clock milliseconds: retention is measured with it. */
  clock: () => number;
  log: (line: string) => void;
}

/**
 * Writes every request (in batches of 25, several in flight); for a team's items, each batch after
 * the check that its lock is still held.
 */
export function writeRequests(table: TableRef & Partial<Writer>, requests: WriteRequest[], teamId?: number) {
  const beforeSend = teamId === undefined ? undefined : () => table.locks!.assertHeld(teamId);
  return writeAll(table.doc, table.tableName, requests, { beforeSend });
}

/** A writer of streamed requests, each batch after `check` (a lock's or a lease's). */
export function requestWriter(
  table: TableRef,
  check?: () => void,
  onWritten?: (count: number) => void | Promise<void>,
) {
  return batchWriter(table.doc, table.tableName, { beforeSend: check, onWritten });
}

/** Awaits a conditional write: false when its condition failed (ConditionalCheckFailedException). */
export async function conditionally(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (error) {
    if ((error as Error).name === 'ConditionalCheckFailedException') return false;
    throw error;
  }
}

export const putRequest = (item: object): WriteRequest => ({ PutRequest: { Item: item as Record<string, unknown> } });
export const deleteRequest = ({ pk, sk }: { pk: string; sk: string }): WriteRequest => ({
  DeleteRequest: { Key: { pk, sk } },
});

type WriteInput = {
  Item?: Record<string, unknown>;
  Key?: Record<string, unknown>;
  RequestItems?: Record<
    string,
    { PutRequest?: { Item: Record<string, unknown> }; DeleteRequest?: { Key: Record<string, unknown> } }[]
  >;
  TransactItems?: Record<string, { Item?: Record<string, unknown>; Key?: Record<string, unknown> }>[];
};
type WriteKey = { pk?: unknown; sk?: unknown };
let counters = 0;

/**
 * Calls `onWrite` with the key of every item a document client writes, counted at its own
 * middleware stack once DynamoDB has accepted the call (a batch's unprocessed items when they are
 * sent again and accepted): what the sync reports as items written, and what tests count.
 */
export function onEveryWrite(doc: DynamoDBDocumentClient, onWrite: (key: WriteKey) => void): void {
  const keyOf = (request: { PutRequest?: { Item: WriteKey }; DeleteRequest?: { Key: WriteKey } }) =>
    request.PutRequest?.Item ?? request.DeleteRequest!.Key;
  const text = (key: WriteKey) => `${key.pk}\u0000${key.sk}`;
  doc.middlewareStack.add(
    (next, context) =>
      async function countWrites(args) {
        const result = await next(args);
        const input = args.input as WriteInput;
        // The document client's commands run as the plain client's (PutItemCommand, …).
        switch (String(context.commandName)) {
          case 'PutItemCommand':
            onWrite(input.Item!);
            break;
          case 'UpdateItemCommand':
          case 'DeleteItemCommand':
            onWrite(input.Key!);
            break;
          case 'BatchWriteItemCommand': {
            const output = result.output as { UnprocessedItems?: Record<string, Parameters<typeof keyOf>[0][]> };
            const unprocessed = new Set(
              Object.values(output.UnprocessedItems ?? {})
                .flat()
                .map(keyOf)
                .map(text),
            );
            for (const request of Object.values(input.RequestItems ?? {}).flat()) {
              if (!unprocessed.has(text(keyOf(request)))) onWrite(keyOf(request));
            }
            break;
          }
          case 'TransactWriteItemsCommand':
            for (const action of input.TransactItems ?? []) {
              const write = action.Put ?? action.Update ?? action.Delete;
              if (write) onWrite(write.Item ?? write.Key!);
            }
        }
        return result;
      },
    // Before the document client marshals: keys as plain values. Each counter its own name.
    { step: 'initialize', name: `onEveryWrite${++counters}` },
  );
}
