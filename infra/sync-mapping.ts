import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
 * size limit here). What is copied is the checked file, written out again at bundling: the function
 * runs with what synth checked. The code's asset hash covers the bundle's whole output, so a changed
 * mapping is a new version of the code, deployed like one.
 *
 * The copy is a command of the local bundling, which `cdk synth` runs with the project's esbuild (a
 * devDependency): Docker bundling, which CDK uses only without one, would not see the staged file
 * and fails the synth saying so.
 */
export function mappingIntoCode(mapping: unknown): ICommandHooks {
  return {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (_inputDir, outputDir) => {
      const staging = mkdtempSync(join(tmpdir(), 'team-resources-sync-mapping-'));
      const staged = join(staging, DEPLOYED_MAPPING_FILE);
      writeFileSync(staged, `${JSON.stringify(mapping, null, 2)}\n`);
      return [copyCommand(staged, join(outputDir, DEPLOYED_MAPPING_FILE), staging)];
    },
  };
}

/** Copies `from` to `to` and removes the staging folder, in the shell CDK runs the hooks with (bash, or cmd on Windows). */
function copyCommand(from: string, to: string, staging: string): string {
  if (process.platform === 'win32') return `copy /y "${from}" "${to}" >nul && rmdir /s /q "${staging}"`;
  const quoted = (path: string) => `'${path.replaceAll("'", "'\\''")}'`;
  return `cp ${quoted(from)} ${quoted(to)} && rm -r ${quoted(staging)}`;
}
