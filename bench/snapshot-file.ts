import { mkdtempSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { importSnapshot, type ImportOptions, type ImportSummary } from '../commands/import/importer.ts';
import { validateSnapshotFile } from '../commands/import/validation.ts';

/** The benchmark's snapshots go through files, as `npm run import` reads them (both passes stream). */
const dir = mkdtempSync(join(tmpdir(), 'bench-snapshots-'));
process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
let files = 0;

export async function writeSnapshotFile(document: unknown): Promise<string> {
  const path = join(dir, `snapshot-${++files}.json`);
  await writeFile(path, JSON.stringify(document));
  return path;
}

/** Validates (pass 1) and imports (pass 2) a snapshot document, as `npm run import` does. */
export async function importDocument(doc: DynamoDBDocumentClient, tableName: string, document: unknown, options?: ImportOptions): Promise<ImportSummary> {
  const path = await writeSnapshotFile(document);
  const validated = await validateSnapshotFile(path);
  if (!validated.ok) throw new Error(`the benchmark's snapshot is invalid:\n${validated.problems.join('\n')}`);
  return importSnapshot(doc, tableName, validated.snapshot, options);
}
