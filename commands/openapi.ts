import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument } from './openapi/document.ts';
import type { CommandSpec } from './cli/args.ts';
import { fail } from './cli/errors.ts';
import { runCommand } from './cli/run.ts';

/**
 * npm run openapi: writes openapi.json from the route table and the valibot schemas, then the
 * typed client's types from it with openapi-typescript's own command line (what the typed-client
 * test compares them with). Both steps are here, not chained in package.json, so that npm's
 * `-- --help` reaches this command rather than the last one of a chain.
 */
const OPENAPI: CommandSpec = {
  name: 'npm run openapi',
  usage: ['npm run openapi'],
  about: [
    "Writes openapi.json, in the project's root, from the route table and the valibot schemas, and the",
    "typed client's types (examples/typed-client/api.d.ts) from it with openapi-typescript.",
  ].join('\n'),
  options: {},
};

const ROOT = fileURLToPath(new URL('..', import.meta.url));

await runCommand(OPENAPI, async () => {
  const path = new URL('../openapi.json', import.meta.url).pathname;
  await writeFile(path, JSON.stringify(buildOpenApiDocument(), null, 2) + '\n');
  process.stdout.write(`wrote ${path}\n`);
  const types = spawnSync(process.execPath, ['node_modules/.bin/openapi-typescript', 'openapi.json', '-o', 'examples/typed-client/api.d.ts'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (types.error) fail(`cannot run openapi-typescript: ${types.error.message}`);
  if (types.status !== 0) fail(`openapi-typescript failed (exit ${types.status ?? types.signal}); openapi.json is written, the typed client's types are not`);
});
