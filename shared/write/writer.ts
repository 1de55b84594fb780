import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { batchWriter, type WriteRequest, writeAll } from './batch-write.ts';
import type { Lease } from './lease.ts';

/** A table and the client that reaches it. */
export interface TableRef {
  doc: DynamoDBDocumentClient;
  tableName: string;
}

/**
 * What the steps of a write (shared/write/steps.ts) write through: the table, the writers' lock
 * it holds (every write first checks it is still held, and every switch makes the lock a condition),
 * the wall clock that retention is measured by, and where a line worth saying goes.
 */
export interface Writer extends TableRef {
  lock: Pick<Lease, 'assertHeld' | 'conditionCheck'>;
  /** Wall-clock milliseconds: retention is measured with it. */
  clock: () => number;
  log: (line: string) => void;
}

/** Writes every request (in batches of 25, several in flight), each batch after the lock's check. */
export function writeRequests(w: Writer, requests: WriteRequest[]): Promise<void> {
  return writeAll(w.doc, w.tableName, requests, { beforeSend: w.lock.assertHeld });
}

/** A writer of streamed requests, each batch after the lock's check. */
export function requestWriter(w: Writer, onWritten?: (count: number) => void | Promise<void>) {
  return batchWriter(w.doc, w.tableName, { beforeSend: w.lock.assertHeld, onWritten });
}

/** Sends one command after the lock's check. */
export async function sendChecked(w: Writer, command: { input: object }): Promise<unknown> {
  w.lock.assertHeld();
  return w.doc.send(command as never);
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
