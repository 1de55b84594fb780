import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { startDynamoDbLocal } from '../commands/local/dynamodb-local.ts';
import { createDocumentClient } from '../commands/store/document-client.ts';
import { ensureTable } from '../commands/store/table.ts';
import { stopChildren } from './functions.ts';

export interface BenchDynamo {
  endpoint: string;
  /** A document client for the benchmark's own writes and reads: patient, as an import is. */
  doc: DynamoDBDocumentClient;
  /** Stops the measurement processes still running and DynamoDB Local, and removes the signal handlers. */
  stop(): Promise<void>;
}

/**
 * The benchmark's DynamoDB Local (bench.ts, warm.ts), with `tableName` made in it. Ctrl-C or
 * SIGTERM stops the measurement processes and DynamoDB Local before exiting (130), so an
 * interrupted run leaves no java or node process behind.
 */
export async function startBenchDynamo(tableName: string): Promise<BenchDynamo> {
  const dynamo = await startDynamoDbLocal();
  const stopOnSignal = () => {
    stopChildren();
    void dynamo.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);
  const doc = createDocumentClient({ endpoint: dynamo.endpoint, maxAttempts: 8, connectionTimeoutMs: 3_000, requestTimeoutMs: 30_000 });
  await ensureTable(doc, tableName);
  return {
    endpoint: dynamo.endpoint,
    doc,
    async stop() {
      process.off('SIGINT', stopOnSignal);
      process.off('SIGTERM', stopOnSignal);
      stopChildren();
      await dynamo.stop();
    },
  };
}
