import type { ValidSnapshot } from '../import/validation.ts';
import { failNow, onExit } from '../cli/run.ts';
import { databaseClient } from '../cli/database.ts';
import { endpointSetting } from '../cli/values.ts';
import { importSnapshot } from '../import/importer.ts';
import { progressDisplay } from '../cli/progress.ts';
import { ensureTable } from '../store/table.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from './dynamodb-local.ts';

/**
 * A local table: DYNAMODB_ENDPOINT's (created there if missing), or one in a DynamoDB Local in
 * memory started for this process. Points the functions' configuration (TABLE_NAME,
 * DYNAMODB_ENDPOINT, AWS_REGION) at it, as Lambda's environment would.
 */
export async function prepareLocalTable() {
  let endpoint = endpointSetting();
  // The DynamoDB Local this process started (no DYNAMODB_ENDPOINT): stopped when the command ends, however it ends.
  let dynamo: DynamoDbLocal | undefined;
  if (!endpoint) {
    process.stderr.write('starting DynamoDB Local (in memory)...\n');
    dynamo = await startDynamoDbLocal();
    onExit(dynamo.stop);
    // Its data was in memory: a new DynamoDB Local would serve an empty table (and none of the
    // tokens printed), so the command says what happened and ends rather than start another.
    void dynamo.ended.then((how) => failNow(`DynamoDB Local stopped (${how}); its data was in memory: stopping`));
    endpoint = dynamo.endpoint;
    process.env.AWS_REGION = dynamo.region;
  }
  process.env.DYNAMODB_ENDPOINT = endpoint;
  const { tableName, doc } = databaseClient(dynamo !== undefined);
  process.env.TABLE_NAME = tableName;
  await ensureTable(doc, tableName);
  return { endpoint, tableName, doc, dynamo };
}

/** A local table (prepareLocalTable) with a snapshot in it. */
export async function prepareLocalData(snapshot: ValidSnapshot) {
  const table = await prepareLocalTable();
  const progress = progressDisplay();
  const summary = await importSnapshot(table.doc, table.tableName, snapshot, { onProgress: progress.importing });
  progress.stop();
  return { ...table, summary };
}
