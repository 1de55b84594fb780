import { parseArgs } from 'node:util';
import { ensureTable } from './store/table.ts';
import { importSnapshot, ImportRejected } from './import/importer.ts';
import { commandTable, fail } from './cli/table.ts';
import { progressReporter } from './import/progress.ts';
import { readSnapshotFile } from './import/snapshot-file.ts';

/** npm run import -- file.json: validates the whole snapshot, then imports it team by team. */
const { positionals } = parseArgs({ allowPositionals: true, options: {} });
if (positionals.length !== 1) fail('usage: npm run import -- <snapshot.json>   (TABLE_NAME names the table; DYNAMODB_ENDPOINT a local endpoint)');

const { tableName, endpoint, doc } = commandTable();
const plan = await readSnapshotFile(positionals[0]!);
if (!plan) process.exit(1);
try {
  if (endpoint) await ensureTable(doc, tableName);
  const summary = await importSnapshot(doc, tableName, plan, { onProgress: progressReporter() });
  process.stdout.write(`imported ${summary.teams} teams (${summary.items} projects and daemons), ${summary.users} users and ${summary.tokens} tokens into ${tableName}\n`);
} catch (error) {
  if (error instanceof ImportRejected) fail(`the snapshot cannot be imported into ${tableName}; nothing was written:\n  ${error.problems.join('\n  ')}`);
  fail(`import failed: ${(error as Error).message}`);
}
