import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument } from './openapi/document.ts';
import { command, runCommand } from './cli/run.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

// Both steps here, not chained in package.json, so that npm's `-- --help` reaches this command.
export const npmRunOpenapi = command(
  {
    name: 'npm run openapi',
    usage: ['npm run openapi'],
    about: `
Writes openapi.json, in the project's root, from the route table and the valibot schemas, and the
typed client's types (examples/typed-client/api.d.ts) from it with openapi-typescript.`,
    options: {},
  },
  async () => {
    const document = buildOpenApiDocument();
    await writeFile(`${ROOT}openapi.json`, `${JSON.stringify(document, null, 2)}\n`);
    process.stdout.write(`wrote ${ROOT}openapi.json\n`);
    // Loaded only now, so --help answers at once; its output is the CLI's, header included.
    const { default: openapiTS, astToString, COMMENT_HEADER } = await import('openapi-typescript');
    await writeFile(
      `${ROOT}examples/typed-client/api.d.ts`,
      COMMENT_HEADER + astToString(await openapiTS(document as never)),
    );
    process.stdout.write(`wrote ${ROOT}examples/typed-client/api.d.ts\n`);
  },
);

if (import.meta.main) await runCommand(npmRunOpenapi);
