import { mkdtempSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateSnapshotFile, type Validation } from '../../commands/import/validation.ts';

/** Snapshot documents go through a file, as they do for `npm run import` (pass 1 streams a file). */
const dir = mkdtempSync(join(tmpdir(), 'snapshots-'));
process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** Writes a snapshot document as JSON (or `raw` text as it is) to a new temporary file; returns its path. */
export async function snapshotFile(document: unknown, options: { raw?: boolean } = {}): Promise<string> {
  const path = join(dir, `snapshot-${process.pid}-${++files}.json`);
  await writeFile(path, options.raw ? String(document) : JSON.stringify(document));
  return path;
}

/** Pass 1 on a document, as `npm run import` runs it on a file (kept, so pass 2 can read it). */
export async function validateDocument(document: unknown, options: { raw?: boolean } = {}): Promise<Validation> {
  return validateSnapshotFile(await snapshotFile(document, options));
}
