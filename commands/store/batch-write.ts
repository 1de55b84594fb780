import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export type WriteRequest = { PutRequest: { Item: Record<string, unknown> } } | { DeleteRequest: { Key: { pk: string; sk: string } } };

const BATCH_SIZE = 25; // BatchWriteItem's limit
const MAX_ROUNDS = 12;

/**
 * Writes requests in parallel batches of 25. Unprocessed items (DynamoDB's answer under load)
 * are retried with exponential backoff and jitter until written; none is dropped.
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
  let pending = batch;
  for (let round = 0; pending.length > 0; round++) {
    if (round >= MAX_ROUNDS) throw new Error(`BatchWriteItem left ${pending.length} items unprocessed after ${MAX_ROUNDS} tries`);
    if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50 * 2 ** round, 5_000)));
    const result = await doc.send(new BatchWriteCommand({ RequestItems: { [tableName]: pending } }));
    pending = (result.UnprocessedItems?.[tableName] as WriteRequest[] | undefined) ?? [];
  }
}
