import { writeFile } from 'node:fs/promises';
import { buildOpenApiDocument } from './openapi/document.ts';

/** npm run openapi: writes openapi.json from the route table and the valibot schemas. */
const path = new URL('../openapi.json', import.meta.url).pathname;
await writeFile(path, JSON.stringify(buildOpenApiDocument(), null, 2) + '\n');
process.stdout.write(`wrote ${path}\n`);
