import { counted, reportLine } from '../cli/text.ts';
import type { ProgressDisplay } from '../cli/progress.ts';
import { validateSnapshotFile, type ValidSnapshot } from './validation.ts';

/**
 * Pass 1 for a command: validates the snapshot file whole, streaming it, with `progress` showing
 * the validating pass. On any problem, says what and where on stderr, a line each (at most 50
 * problems, then how many more), and returns undefined; nothing has been written then. Every
 * caller names a file it has checked it can read (cli/paths.ts inputFile, or the demo snapshot).
 */
export async function readSnapshotFile(path: string, progress?: ProgressDisplay): Promise<ValidSnapshot | undefined> {
  const result = await validateSnapshotFile(path, (bytes, total) => progress?.validating(bytes, total));
  progress?.stop();
  if (result.ok) return result.snapshot;
  reportLine(`${path} is not a valid snapshot; nothing was imported. ${counted(result.count, 'problem')}:`);
  for (const line of result.problems) reportLine(`  ${line}`);
  return undefined;
}
