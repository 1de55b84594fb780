import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument } from './openapi/document.ts';
import { fail } from './cli/errors.ts';
import { command, runCommand } from './cli/run.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

// Both steps here, not chained in package.json, so that npm's `-- --help` reaches this command.
export const npmRunOpenapi = command({
  name: 'npm run openapi',
  usage: ['npm run openapi'],
  about: `
Writes openapi.json, in the project's root, from the route table and the valibot schemas, and the
typed client's types (examples/typed-client/api.d.ts) from it with openapi-typescript.`,
  options: {},
}, async () => {
  await writeFile(`${ROOT}openapi.json`, JSON.stringify(buildOpenApiDocument(), null, 2) + '\n');
  process.stdout.write(`wrote ${ROOT}openapi.json\n`);
  const types = spawnSync(process.execPath, ['node_modules/.bin/openapi-typescript', 'openapi.json', '-o', 'examples/typed-client/api.d.ts'], { cwd: ROOT, stdio: 'inherit' });
  if (types.error) fail(`cannot run openapi-typescript: ${types.error.message}`);
  if (types.status !== 0) fail(`openapi-typescript failed (exit ${types.status ?? types.signal}); openapi.json is written, the typed client's types are not`);
});

if (import.meta.main) await runCommand(npmRunOpenapi);
