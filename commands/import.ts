import { parseArgs } from 'node:util';
import { ensureTable } from './store/table.ts';
import { importSnapshot, ImportRejected } from './import/importer.ts';
import { commandTable, fail } from './cli/table.ts';
import { progressDisplay } from './import/progress.ts';
import { readSnapshotFile } from './import/snapshot-file.ts';

/** npm run import -- file.json: validates the whole snapshot (pass 1), then imports it (pass 2). */
const { positionals } = parseArgs({ allowPositionals: true, options: {} });
if (positionals.length !== 1) fail('usage: npm run import -- <snapshot.json>   (TABLE_NAME names the table; DYNAMODB_ENDPOINT a local endpoint)');

const { tableName, endpoint, doc } = commandTable();
const progress = progressDisplay();
const snapshot = await readSnapshotFile(positionals[0]!, { progress });
if (!snapshot) process.exit(1);
try {
  if (endpoint) await ensureTable(doc, tableName);
  const log = (line: string) => {
    progress.stop();
    process.stderr.write(`${line}\n`);
  };
  const summary = await importSnapshot(doc, tableName, snapshot, { onProgress: progress.importing, log });
  progress.stop();
  process.stdout.write(`imported ${summary.teams} teams (${summary.items} projects and daemons), ${summary.users} users and ${summary.tokens} tokens into ${tableName}\n`);
} catch (error) {
  progress.stop();
  if (error instanceof ImportRejected) fail(`the snapshot cannot be imported into ${tableName}; nothing was written:\n  ${error.problems.join('\n  ')}`);
  fail(`import failed: ${(error as Error).message}`);
}
