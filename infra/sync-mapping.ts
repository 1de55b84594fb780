import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ICommandHooks } from 'aws-cdk-lib/aws-lambda-nodejs';
import { checkedMappingFile, DEPLOYED_MAPPING_FILE } from '../shared/sync/deployed-mapping.ts';
import { MappingError } from '../shared/sync/mapping.ts';
import { UsageError } from './usage-error.ts';

/**
 * The deployed sync's mapping file (`-c syncMapping=<mapping.json>`, a path from where synth runs):
 * read and checked at synth, offline, as the commands check `--mapping` but against both engines'
 * default mapping, since only the secret says which engine the source is. A file that is no mapping
 * fails the synth in one line naming the problem.
 */
export function syncMappingFile(path: string): unknown {
  try {
    return checkedMappingFile(path);
  } catch (error) {
    throw error instanceof MappingError ? new UsageError(`syncMapping: ${error.message}`) : error;
  }
}

/**
 * The bundling hooks that put the mapping into the sync function's code, beside the bundle, as
 * DEPLOYED_MAPPING_FILE (shared/sync/deployed-mapping.ts says why the code rather than an
 * environment variable: Lambda allows 4 KB of environment variables in all, and a mapping has no
 * size limit here). What is copied is the checked file, written out again when the function is
 * bundled into the cloud assembly's directory (`stagingDir`, named by its content): the function
 * runs with what synth checked. The code's asset hash covers the bundle's whole output, so a changed
 * mapping is a new version of the code, deployed like one.
 *
 * The copy is a command of the local bundling, which `cdk synth` runs with the project's esbuild (a
 * devDependency): Docker bundling, which CDK uses only without one, would not see the staged file
 * and fails the synth saying so.
 */
export function mappingIntoCode(mapping: unknown, stagingDir: string): ICommandHooks {
  const text = `${JSON.stringify(mapping, null, 2)}\n`;
  const staged = join(stagingDir, `sync-mapping.${createHash('sha256').update(text).digest('hex').slice(0, 16)}.json`);
  return {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (_inputDir, outputDir) => {
      mkdirSync(stagingDir, { recursive: true });
      writeFileSync(staged, text);
      return [copyCommand(staged, join(outputDir, DEPLOYED_MAPPING_FILE))];
    },
  };
}

/** Copies `from` to `to` in the shell CDK runs the hooks with (bash, or cmd on Windows). */
function copyCommand(from: string, to: string): string {
  if (process.platform === 'win32') return `copy /y "${from}" "${to}" >nul`;
  const quoted = (path: string) => `'${path.replaceAll("'", "'\\''")}'`;
  return `cp ${quoted(from)} ${quoted(to)}`;
}
