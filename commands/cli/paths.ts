import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { usageError } from './errors.ts';
import { escapeText } from './text.ts';

/** The demo snapshot `npm start` and `npm run invoke` use unless told otherwise. */
export const DEMO_SNAPSHOT = new URL('../../data/demo-snapshot.json', import.meta.url).pathname;

/**
 * A file named on the command line (`what` says which, e.g. `--event`), as the user meant it:
 * relative to the directory they ran the command in (npm runs every script from the project root
 * and says where the user was in INIT_CWD; run directly with node, the working directory is the
 * user's). One that does not exist, is not a file or cannot be read is a usage error, naming both
 * the path given and where it led.
 */
export async function inputFile(path: string, what: string): Promise<string> {
  const absolute = resolve(process.env.INIT_CWD || process.cwd(), path);
  const shown = absolute === path ? escapeText(path) : `${escapeText(path)} (${escapeText(absolute)})`;
  try {
    if (!(await stat(absolute)).isFile()) usageError(`${what} ${shown} is not a file`);
    await access(absolute, constants.R_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') usageError(`${what}: cannot read ${shown}: no such file`);
    if (code === 'EACCES') usageError(`${what}: cannot read ${shown}: permission denied`);
    throw error;
  }
  return absolute;
}
