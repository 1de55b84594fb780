import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { untilProcessed } from '../../shared/store/retry.ts';
import type { Key } from '../../shared/store/keys.ts';

export type WriteRequest = { PutRequest: { Item: Record<string, unknown> } } | { DeleteRequest: { Key: Key } };

const BATCH_SIZE = 25; // BatchWriteItem's limit

/** Batches in flight at once. */
const CONCURRENCY = 16;

export interface WriterOptions {
  /** Called after each batch is written, with its size; an async observer is awaited. */
  onWritten?: (count: number) => void | Promise<void>;
  /** Called before each batch is sent: may throw to stop the writer (the import lock's check). */
  beforeSend?: () => void;
}

/**
 * Writes requests in batches of 25, several batches in flight, for a producer that streams:
 * `add` returns a promise only when the writer is full, so a reader of a file slows
 * to the pace of DynamoDB instead of buffering the file in memory. Unprocessed items (DynamoDB's
 * answer under load) are sent again under the one retry policy (shared/store/retry.ts); none is
 * dropped. The first failure stops the writer and is thrown by the next call and by `flush`.
 */
export class BatchWriter {
  private readonly doc: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly options: WriterOptions;
  private batch: WriteRequest[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private failure: unknown;
  written = 0;

  constructor(doc: DynamoDBDocumentClient, tableName: string, options: WriterOptions = {}) {
    this.doc = doc;
    this.tableName = tableName;
    this.options = options;
  }

  add(request: WriteRequest): void | Promise<void> {
    if (this.failure) throw this.failure;
    this.batch.push(request);
    if (this.batch.length < BATCH_SIZE) return undefined;
    return this.send();
  }

  /** Sends what is left and waits for every batch in flight. */
  async flush(): Promise<void> {
    if (this.batch.length > 0) await this.send();
    while (this.inFlight.size > 0) await Promise.race(this.inFlight);
    if (this.failure) throw this.failure;
  }

  private send(): void | Promise<void> {
    const batch = this.batch;
    this.batch = [];
    this.options.beforeSend?.();
    // A batch's promise never rejects: its failure is kept, and thrown by the next call.
    const sending: Promise<void> = this.write(batch)
      .then(async () => {
        this.written += batch.length;
        await this.options.onWritten?.(batch.length);
      })
      .catch((error: unknown) => {
        this.failure ??= error;
      })
      .finally(() => this.inFlight.delete(sending));
    this.inFlight.add(sending);
    if (this.inFlight.size < CONCURRENCY) return undefined;
    return Promise.race(this.inFlight).then(() => {
      if (this.failure) throw this.failure;
    });
  }

  private async write(batch: WriteRequest[]): Promise<void> {
    await untilProcessed('BatchWriteItem', batch, async (pending) => {
      const result = await this.doc.send(new BatchWriteCommand({ RequestItems: { [this.tableName]: pending } }));
      return (result.UnprocessedItems?.[this.tableName] as WriteRequest[] | undefined) ?? [];
    }, { retries: 10 });
  }
}

/** Writes every request (an array or any iterable), in parallel batches of 25. */
export async function writeAll(doc: DynamoDBDocumentClient, tableName: string, requests: Iterable<WriteRequest>, options: WriterOptions = {}): Promise<void> {
  const writer = new BatchWriter(doc, tableName, options);
  for (const request of requests) {
    const full = writer.add(request);
    if (full) await full;
  }
  await writer.flush();
}
