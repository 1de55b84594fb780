import { failNow, onExit } from '../cli/run.ts';
import { databaseClient } from '../cli/database.ts';
import { endpointSetting } from '../cli/values.ts';
import { reportLine } from '../cli/text.ts';
import { ensureTable } from '../store/table.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from './dynamodb-local.ts';
import type { Mapping } from '../../shared/sync/mapping.ts';
import type { SourceUrl } from '../../shared/sync/source.ts';

/**
 * A local table kept in step with a source database (npm start -- --source): DYNAMODB_ENDPOINT's
 * (created there if missing), or one in a DynamoDB Local in memory started for this process, and
 * the sync running into it until the command ends. Resolves once the first full pass is done;
 * points the functions' configuration at the table, as Lambda's environment would.
 */
export async function prepareLocalSync(source: SourceUrl, mapping: Mapping, timezone: string) {
  const { runSync, SyncRefused } = await import('../../shared/sync/sync.ts');
  let endpoint = endpointSetting();
  let dynamo: DynamoDbLocal | undefined;
  if (!endpoint) {
    process.stderr.write('starting DynamoDB Local (in memory)...\n');
    dynamo = await startDynamoDbLocal();
    onExit(dynamo.stop);
    void dynamo.ended.then((how) => failNow(`DynamoDB Local stopped (${how}); its data was in memory: stopping`));
    endpoint = dynamo.endpoint;
    process.env.AWS_REGION = dynamo.region;
  }
  process.env.DYNAMODB_ENDPOINT = endpoint;
  const { tableName, doc } = databaseClient(dynamo !== undefined);
  process.env.TABLE_NAME = tableName;
  await ensureTable(doc, tableName);
  reportLine(`syncing ${tableName} from ${source.redacted}...`);

  const stop = new AbortController();
  let ready: () => void;
  const firstPass = new Promise<void>((resolve) => (ready = resolve));
  const running = runSync(
    {
      source,
      mapping,
      timezone,
      table: { doc, tableName },
      say: (line) => void reportLine(line),
      // Its metrics are for CloudWatch; on a laptop the lines it says are enough.
      metric: () => {},
    },
    { signal: stop.signal, onReady: () => ready() },
  );
  onExit(async () => {
    stop.abort();
    await running.catch(() => {});
  });
  // A sync that ends (the source refuses the credentials it took a minute ago, a second sync) ends the command.
  const ended = running.then(
    () => undefined,
    (error) => {
      const message = error instanceof SyncRefused ? error.message : `the sync failed: ${(error as Error).message}`;
      failNow(message);
      throw error;
    },
  );
  await Promise.race([firstPass, ended]);
  return { endpoint, tableName, doc, dynamo };
}
