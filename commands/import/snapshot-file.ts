import { counted } from '../cli/text.ts';
import { progressDisplay, type ProgressDisplay } from './progress.ts';
import { validateSnapshotFile, type ValidSnapshot } from './validation.ts';

export type { ValidSnapshot };

export interface ReadOptions {
  /** Where problems go, a line each (stderr by default). A function alone stands for this. */
  report?: (line: string) => unknown;
  /** The progress display of the validating pass (none by default). */
  progress?: ProgressDisplay;
}

/**
 * Pass 1 for a command: validates the snapshot file whole, streaming it. On any problem, says
 * what and where (at most 50 problems, then how many more) and returns undefined; nothing has
 * been written then.
 */
export async function readSnapshotFile(path: string, reportOrOptions: ReadOptions | ReadOptions['report'] = {}): Promise<ValidSnapshot | undefined> {
  const options = typeof reportOrOptions === 'function' ? { report: reportOrOptions } : reportOrOptions;
  const report = options.report ?? ((line: string) => process.stderr.write(line + '\n'));
  let result;
  try {
    result = await validateSnapshotFile(path, { onBytes: (bytes, total) => options.progress?.validating(bytes, total) });
  } catch (error) {
    options.progress?.stop();
    const { code, message } = error as NodeJS.ErrnoException;
    report(`cannot read ${path}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : message}`);
    return undefined;
  }
  options.progress?.stop();
  if (result.ok) return result.snapshot;
  report(`${path} is not a valid snapshot; nothing was imported. ${counted(result.count, 'problem')}:`);
  for (const line of result.problems) report(`  ${line}`);
  return undefined;
}

export { progressDisplay };
