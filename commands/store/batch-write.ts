import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { untilProcessed } from '../../shared/store/retry.ts';

export type WriteRequest = { PutRequest: { Item: Record<string, unknown> } } | { DeleteRequest: { Key: { pk: string; sk: string } } };

const BATCH_SIZE = 25; // BatchWriteItem's limit

/**
 * Writes requests in parallel batches of 25. Unprocessed items (DynamoDB's answer under load)
 * are sent again under the one retry policy (shared/store/retry.ts); none is dropped.
 */
export async function writeAll(
  doc: DynamoDBDocumentClient,
  tableName: string,
  requests: Iterable<WriteRequest>,
  options: { concurrency?: number; onWritten?: (count: number) => void | Promise<void> } = {},
): Promise<number> {
  const iterator = requests[Symbol.iterator]();
  let written = 0;
  const nextBatch = (): WriteRequest[] => {
    const batch: WriteRequest[] = [];
    for (let r = iterator.next(); !r.done; r = iterator.next()) {
      batch.push(r.value);
      if (batch.length === BATCH_SIZE) break;
    }
    return batch;
  };
  const worker = async () => {
    for (let batch = nextBatch(); batch.length > 0; batch = nextBatch()) {
      await writeBatch(doc, tableName, batch);
      written += batch.length;
      await options.onWritten?.(batch.length);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 16 }, worker));
  return written;
}

async function writeBatch(doc: DynamoDBDocumentClient, tableName: string, batch: WriteRequest[]): Promise<void> {
  await untilProcessed('BatchWriteItem', batch, async (pending) => {
    const result = await doc.send(new BatchWriteCommand({ RequestItems: { [tableName]: pending } }));
    return (result.UnprocessedItems?.[tableName] as WriteRequest[] | undefined) ?? [];
  }, { budget: 'command' });
}
