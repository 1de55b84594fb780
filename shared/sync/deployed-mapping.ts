import { readFileSync } from 'node:fs';
import { defaultMapping, MappingError, withMappingFile } from './mapping.ts';
import { ENGINE_NAMES, type SourceEngine } from './source/url.ts';

/**
 * The mapping file of the deployed sync (docs/deploy.md, "The sync"; the format is the commands'
 * `--mapping`, shared/sync/mapping.ts). `cdk synth -c syncMapping=<file>` reads and checks it, and
 * puts it into the sync function's code as this file, beside the bundle (infra/sync-mapping.ts);
 * SOURCE_MAPPING_FILE names it, and the function reads it at cold start (deployed-config.ts).
 *
 * Not in an environment variable: Lambda allows 4 KB for all of a function's environment variables
 * together ("Lambda quotas", https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html;
 * "Working with Lambda environment variables",
 * https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html), which a mapping that
 * replaces a few queries outgrows, while the function's code may hold 250 MB unzipped.
 */
export const DEPLOYED_MAPPING_FILE = 'sync-mapping.json';

/** The environment variable naming the mapping file, when the stack gives the sync one. */
export const MAPPING_FILE_VARIABLE = 'SOURCE_MAPPING_FILE';

const ENGINES = Object.keys(ENGINE_NAMES) as SourceEngine[];

/** Why a file could not be read, in a few words. */
function unreadable(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'there is no such file';
  if (code === 'EISDIR') return 'it is a directory';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  return (error as Error).message;
}

/**
 * A mapping file's contents, read and checked whole, as the commands check `--mapping` but against
 * both engines' default mapping (with team slugs and without): at synth, and at the deployed sync's
 * cold start, the engine is not known yet (the secret says it, at run time). Throws MappingError,
 * one line naming the file and what is wrong (its key, for the mapping's own rules).
 */
export function checkedMappingFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new MappingError(`the mapping ${path} cannot be read: ${unreadable(error)}`);
  }
  let file: unknown;
  try {
    file = JSON.parse(text);
  } catch (error) {
    throw new MappingError(`the mapping ${path} is not usable: ${(error as Error).message}`);
  }
  for (const engine of ENGINES) {
    for (const teamsHaveSlug of [true, false]) {
      try {
        withMappingFile(defaultMapping(engine, { teamsHaveSlug }), file);
      } catch (error) {
        if (!(error instanceof MappingError)) throw error;
        throw new MappingError(`the mapping ${path} is not usable: ${error.message}`);
      }
    }
  }
  return file;
}
