import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ValidSnapshot } from '../import/validation.ts';
import { commandTable } from '../cli/table.ts';
import { endpointSetting } from '../cli/values.ts';
import { importSnapshot, type ImportSummary } from '../import/importer.ts';
import { ensureTable } from '../store/table.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from './dynamodb-local.ts';
import { progressDisplay } from '../import/progress.ts';

export interface LocalData {
  endpoint: string;
  tableName: string;
  doc: DynamoDBDocumentClient;
  summary: ImportSummary;
  /** DynamoDB Local was started here (no DYNAMODB_ENDPOINT), and stop() stops it. */
  startedHere: boolean;
  /** Stops DynamoDB Local if this process started it. */
  stop(): Promise<void>;
}

/**
 * A local table with a snapshot in it: DYNAMODB_ENDPOINT when set (the table is created there if
 * missing), else a DynamoDB Local in memory started for this process. Also points the functions'
 * configuration (TABLE_NAME, DYNAMODB_ENDPOINT) at it, as Lambda's environment would. The client
 * is the commands' own (commands/cli/table.ts): an endpoint that never answers is reported after 10 s.
 */
export async function prepareLocalData(snapshot: ValidSnapshot, log = (line: string) => process.stderr.write(line + '\n')): Promise<LocalData> {
  let dynamo: DynamoDbLocal | undefined;
  let endpoint = endpointSetting();
  if (!endpoint) {
    log('starting DynamoDB Local (in memory)...');
    dynamo = await startDynamoDbLocal();
    endpoint = dynamo.endpoint;
  }
  const { tableName, doc } = commandTable({ endpoint, startedHere: dynamo !== undefined });
  process.env.TABLE_NAME = tableName;
  process.env.DYNAMODB_ENDPOINT = endpoint;
  const stop = async () => { await dynamo?.stop(); };
  try {
    await ensureTable(doc, tableName);
    const progress = progressDisplay();
    const summary = await importSnapshot(doc, tableName, snapshot, { onProgress: progress.importing });
    progress.stop();
    return { endpoint, tableName, doc, summary, stop, startedHere: dynamo !== undefined };
  } catch (error) {
    await stop();
    throw error;
  }
}
