import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { ROUTES, type Route } from '../shared/api/routes.ts';
import { lambdaContext } from './local/api-gateway-event.ts';
import { FUNCTION_TIMEOUT_MS } from '../shared/api/function-settings.ts';
import { loadFunctionHandlers } from './local/server.ts';
import { fail, usageError } from './cli/errors.ts';
import { DEMO_SNAPSHOT, inputFile } from './cli/paths.ts';
import { command, runCommand } from './cli/run.ts';
import { escapeText, shownText } from './cli/text.ts';
import { checkLogLevel, endpointSetting } from './cli/values.ts';

const FUNCTIONS = ROUTES.map((r) => r.name);

export const npmRunInvoke = command(
  {
    name: 'npm run invoke',
    usage: [`npm run invoke -- <${FUNCTIONS.join('|')}> --event <event.json> [--data <snapshot.json>]`],
    about: `
Runs one function with the event in the file, passed as it is (any JSON), and prints what the
function returns, as JSON, on stdout; everything else goes to stderr. The function reads the demo
snapshot (or --data) in a DynamoDB Local started for the call, or with DYNAMODB_ENDPOINT that table.
Sample events are in events/. A function that throws is a failure (exit 1).`,
    options: {
      event: {
        type: 'string',
        value: '<event.json>',
        help: 'the event: a JSON file (an API Gateway HTTP API event, payload 2.0)',
      },
      data: {
        type: 'string',
        value: '<snapshot.json>',
        help: 'the snapshot to import first; default data/demo-snapshot.json',
      },
    },
    environment: {
      TABLE_NAME: 'the table (default team-resources)',
      DYNAMODB_ENDPOINT: 'a running DynamoDB-compatible endpoint whose table the function reads as it is',
      LOG_LEVEL: "the function's log level (default silent); its logs go to stderr",
    },
    positionals: ['<function>'],
  },
  async ({ values, positionals: [name] }) => {
    if (!FUNCTIONS.includes(name as Route['name']))
      usageError(`unknown function "${shownText(name)}" (use ${FUNCTIONS.join(', ')})`);
    const eventFile = await inputFile(values.event ?? usageError('--event <event.json> is required'), '--event');
    const endpoint = endpointSetting(); // malformed settings are said before anything starts
    process.env.LOG_LEVEL ||= 'silent';
    checkLogLevel();
    if (values.data !== undefined && endpoint)
      usageError('--data imports into a DynamoDB Local of its own; it does not apply with DYNAMODB_ENDPOINT');
    const dataFile = values.data === undefined ? DEMO_SNAPSHOT : await inputFile(values.data, '--data');
    let event: unknown;
    try {
      event = JSON.parse(await readFile(eventFile, 'utf8'));
    } catch (error) {
      // Where it breaks, never V8's quote of the text: an event holds a token.
      const where = /line \d+ column \d+/.exec((error as Error).message)?.[0];
      usageError(`--event ${escapeText(values.event)} is not JSON${where ? `: ${where}` : ''}`);
    }

    // Loaded only now, so --help and usage errors answer at once.
    const { readSnapshotFile } = await import('./import/snapshot-file.ts');
    const { prepareLocalData } = await import('./local/local-data.ts');
    const { DEFAULT_TABLE } = await import('./cli/database.ts');
    if (!endpoint) await prepareLocalData((await readSnapshotFile(dataFile)) ?? fail());
    process.env.TABLE_NAME ||= DEFAULT_TABLE;

    // stdout is the function's result alone: whatever else writes there (its logger) goes to stderr.
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
    const handler = (await loadFunctionHandlers())[name as Route['name']];
    let result: unknown;
    try {
      // The event goes in exactly as the file has it, even when it is not an event at all (null, 3, []).
      result = await handler(event as APIGatewayProxyEventV2, lambdaContext(name!, FUNCTION_TIMEOUT_MS, randomUUID()));
    } catch (error) {
      const thrown = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      fail(`the ${name} function threw: ${escapeText(thrown)}`);
    }
    await new Promise((resolve) => write(`${JSON.stringify(result ?? null, null, 2)}\n`, resolve));
  },
);

if (import.meta.main) await runCommand(npmRunInvoke);
