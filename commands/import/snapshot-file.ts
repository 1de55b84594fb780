import { readFile } from 'node:fs/promises';
import { validateSnapshot, type SnapshotPlan } from './snapshot.ts';

/** Reads and validates a snapshot file; on any problem, says what and where, and returns undefined. */
export async function readSnapshotFile(path: string, report = (line: string) => process.stderr.write(line + '\n')): Promise<SnapshotPlan | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    report(`cannot read ${path}: ${(error as Error).message}`);
    return undefined;
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    report(`${path} is not valid JSON: ${(error as Error).message}`);
    return undefined;
  }
  const result = validateSnapshot(document);
  if (result.ok) return result.plan;
  report(`${path} is not a valid snapshot; nothing was imported. ${result.problems.length} problem${result.problems.length === 1 ? '' : 's'}:`);
  for (const problem of result.problems) report(`  ${problem}`);
  return undefined;
}
