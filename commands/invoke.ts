import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { ROUTES, type Route } from '../shared/routes.ts';
import { lambdaContext } from './local/api-gateway-event.ts';
import { DEMO_SNAPSHOT, prepareLocalData } from './local/local-data.ts';
import { FUNCTION_TIMEOUT_MS, loadFunctionHandlers } from './local/server.ts';
import { readSnapshotFile } from './import/snapshot-file.ts';

/**
 * npm run invoke -- projects --event events/projects.json: runs one function with one event
 * file and prints its result, as `sam local invoke` would, without Docker. The data is the demo
 * snapshot (or --data) in a DynamoDB Local started for the call, or DYNAMODB_ENDPOINT's table as is.
 */
const USAGE = `usage: npm run invoke -- <${ROUTES.map((r) => r.name).join('|')}> --event <event.json> [--data snapshot.json]`;
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { event: { type: 'string' }, data: { type: 'string' } },
});
const name = positionals[0] as Route['name'] | undefined;
if (!name || !ROUTES.some((r) => r.name === name) || !values.event) fail(USAGE);

let event: APIGatewayProxyEventV2;
try {
  event = JSON.parse(await readFile(values.event, 'utf8')) as APIGatewayProxyEventV2;
} catch (error) {
  fail(`cannot read the event ${values.event}: ${(error as Error).message}`);
}

// With DYNAMODB_ENDPOINT the function reads that table as it is; otherwise it gets fresh local data.
const local = process.env.DYNAMODB_ENDPOINT?.trim()
  ? undefined
  : await prepareLocalData((await readSnapshotFile(values.data ?? DEMO_SNAPSHOT)) ?? fail('the snapshot is not valid'));
try {
  process.env.LOG_LEVEL ??= 'silent';
  const handlers = await loadFunctionHandlers();
  const result = await handlers[name](event, lambdaContext(name, FUNCTION_TIMEOUT_MS, event.requestContext?.requestId ?? 'invoke'));
  process.stdout.write(JSON.stringify(result, null, 2) + '\n');
} finally {
  await local?.stop();
}

function fail(message: string): never {
  process.stderr.write(message + '\n');
  process.exit(1);
}
