import { writeFile } from 'node:fs/promises';
import { buildOpenApiDocument } from './openapi/document.ts';
import type { CommandSpec } from './cli/args.ts';
import { runCommand } from './cli/run.ts';

/** npm run openapi: writes openapi.json from the route table and the valibot schemas. */
const OPENAPI: CommandSpec = {
  name: 'npm run openapi',
  usage: ['npm run openapi'],
  about: "Writes openapi.json, in the project's root, from the route table and the valibot schemas.",
  options: {},
};

await runCommand(OPENAPI, async () => {
  const path = new URL('../openapi.json', import.meta.url).pathname;
  await writeFile(path, JSON.stringify(buildOpenApiDocument(), null, 2) + '\n');
  process.stdout.write(`wrote ${path}\n`);
});
