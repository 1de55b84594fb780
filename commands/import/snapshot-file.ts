import { counted } from '../cli/text.ts';
import { progressDisplay, type ProgressDisplay } from './progress.ts';
import { validateSnapshotFile, type ValidSnapshot } from './validation.ts';

/**
 * Pass 1 for a command: validates the snapshot file whole, streaming it, with `progress` showing
 * the validating pass. On any problem, says what and where to `report`, a line each (at most 50
 * problems, then how many more), and returns undefined; nothing has been written then.
 */
export async function readSnapshotFile(path: string, report: (line: string) => unknown, progress?: ProgressDisplay): Promise<ValidSnapshot | undefined> {
  const result = await validateSnapshotFile(path, (bytes, total) => progress?.validating(bytes, total)).catch((error: NodeJS.ErrnoException) => error);
  progress?.stop();
  if (result instanceof Error) {
    const { code, message } = result;
    report(`cannot read ${path}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : message}`);
    return undefined;
  }
  if (result.ok) return result.snapshot;
  report(`${path} is not a valid snapshot; nothing was imported. ${counted(result.count, 'problem')}:`);
  for (const line of result.problems) report(`  ${line}`);
  return undefined;
}

export { progressDisplay };
