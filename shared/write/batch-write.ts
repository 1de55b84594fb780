import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { untilProcessed, WRITER_RETRIES } from '../table/retry.ts';
import type { Key } from '../table/keys.ts';

export type WriteRequest = { PutRequest: { Item: Record<string, unknown> } } | { DeleteRequest: { Key: Key } };

const BATCH_SIZE = 25; // BatchWriteItem's limit

/** Batches in flight at once. */
const CONCURRENCY = 16;

interface WriterOptions {
  /** Called after each batch is written, with its size; an async observer is awaited. */
  onWritten?: (count: number) => void | Promise<void>;
  /** Called before each batch is sent: may throw to stop the writer (the import lock's check). */
  beforeSend?: () => void;
}

/**
 * Writes requests in batches of 25, several batches in flight, for a producer that streams:
 * `add` returns a promise only when the writer is full, so a reader of a file slows to the pace
 * of DynamoDB instead of buffering the file in memory. Unprocessed items (DynamoDB's answer under
 * load) are sent again under the one retry policy (shared/table/retry.ts); none is dropped. The
 * first failure stops the writer and is thrown by the next call and by `flush`.
 */
export function batchWriter(
  doc: DynamoDBDocumentClient,
  tableName: string,
  { onWritten, beforeSend }: WriterOptions = {},
) {
  let batch: WriteRequest[] = [];
  const inFlight = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  let written = 0;
  const throwFailure = () => {
    if (failure) throw failure.error;
  };

  function send(): void | Promise<void> {
    const sending = batch;
    batch = [];
    beforeSend?.();
    // A batch's promise never rejects: its failure is kept, and thrown by the next call.
    const done: Promise<void> = untilProcessed(
      'BatchWriteItem',
      sending,
      async (pending) => {
        const result = await doc.send(new BatchWriteCommand({ RequestItems: { [tableName]: pending } }));
        return (result.UnprocessedItems?.[tableName] as WriteRequest[] | undefined) ?? [];
      },
      WRITER_RETRIES,
    )
      .then(async () => {
        written += sending.length;
        await onWritten?.(sending.length);
      })
      .catch((error: unknown) => {
        failure ??= { error };
      })
      .finally(() => inFlight.delete(done));
    inFlight.add(done);
    if (inFlight.size >= CONCURRENCY) return Promise.race(inFlight).then(throwFailure);
  }

  return {
    /** Requests written so far. */
    get written() {
      return written;
    },
    add(request: WriteRequest): void | Promise<void> {
      throwFailure();
      batch.push(request);
      if (batch.length === BATCH_SIZE) return send();
    },
    /** Sends what is left and waits for every batch in flight. */
    async flush(): Promise<void> {
      if (batch.length > 0) await send();
      await Promise.all(inFlight);
      throwFailure();
    },
  };
}

/** Writes every request, in parallel batches of 25. */
export async function writeAll(
  doc: DynamoDBDocumentClient,
  tableName: string,
  requests: WriteRequest[],
  options: WriterOptions = {},
): Promise<void> {
  const batch = batchWriter(doc, tableName, options);
  for (const request of requests) await batch.add(request);
  await batch.flush();
}
