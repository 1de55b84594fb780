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
