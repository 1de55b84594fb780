import { readFile } from 'node:fs/promises';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { ROUTES, type Route } from '../shared/routes.ts';
import { lambdaContext } from './local/api-gateway-event.ts';
import { FUNCTION_TIMEOUT_MS, loadFunctionHandlers } from './local/server.ts';
import type { CommandSpec } from './cli/args.ts';
import { fail, usageError } from './cli/errors.ts';
import { DEMO_SNAPSHOT, inputFile } from './cli/paths.ts';
import { onExit, runCommand } from './cli/run.ts';
import { escapeText, reportLine } from './cli/text.ts';
import { endpointSetting } from './cli/values.ts';

/**
 * npm run invoke -- projects --event events/projects.json: runs one function with one event
 * file and prints its result, as `sam local invoke` would, without Docker. The data is the demo
 * snapshot (or --data) in a DynamoDB Local started for the call, or DYNAMODB_ENDPOINT's table as is.
 */
const FUNCTIONS = ROUTES.map((r) => r.name);
const INVOKE: CommandSpec = {
  name: 'npm run invoke',
  usage: [`npm run invoke -- <${FUNCTIONS.join('|')}> --event <event.json> [--data <snapshot.json>]`],
  about: [
    'Runs one function with the event in the file, passed as it is (any JSON), and prints what the',
    'function returns, as JSON, on stdout; everything else goes to stderr. The function reads the demo',
    'snapshot (or --data) in a DynamoDB Local started for the call, or with DYNAMODB_ENDPOINT that table.',
    'Sample events are in events/. A function that throws is a failure (exit 1).',
  ].join('\n'),
  arguments: ['<function>'],
  options: {
    event: { type: 'string', value: '<event.json>', help: 'the event: a JSON file (an API Gateway HTTP API event, payload 2.0)' },
    data: { type: 'string', value: '<snapshot.json>', help: 'the snapshot to import first; default data/demo-snapshot.json' },
  },
  environment: {
    TABLE_NAME: 'the table (default team-resources)',
    DYNAMODB_ENDPOINT: "a running DynamoDB-compatible endpoint whose table the function reads as it is (no import)",
    LOG_LEVEL: "the function's log level (default silent); its logs go to stderr",
  },
};

await runCommand(INVOKE, async (line) => {
  const name = line.positionals[0] as Route['name'];
  if (!FUNCTIONS.includes(name)) usageError(`unknown function "${escapeText(name)}" (use ${FUNCTIONS.join(', ')})`);
  const eventOption = line.option('event') ?? usageError('--event <event.json> is required');
  const eventFile = await inputFile(eventOption, '--event');
  const dataOption = line.option('data');
  const endpoint = endpointSetting(); // a malformed DYNAMODB_ENDPOINT is said before anything starts
  if (dataOption !== undefined && endpoint) usageError('--data imports into a DynamoDB Local of its own; it does not apply with DYNAMODB_ENDPOINT');
  const dataFile = dataOption === undefined ? DEMO_SNAPSHOT : await inputFile(dataOption, '--data');
  let event: unknown;
  try {
    event = JSON.parse(await readFile(eventFile, 'utf8'));
  } catch (error) {
    usageError(`--event ${escapeText(eventOption)} is not JSON: ${jsonProblem(error as Error)}`);
  }

  // Loaded only now, so --help and usage errors answer at once.
  const { readSnapshotFile } = await import('./import/snapshot-file.ts');
  const { prepareLocalData } = await import('./local/local-data.ts');
  const { DEFAULT_TABLE } = await import('./cli/table.ts');

  // With DYNAMODB_ENDPOINT the function reads that table as it is; otherwise it gets fresh local data.
  if (!endpoint) {
    const plan = (await readSnapshotFile(dataFile, reportLine)) ?? fail();
    const local = await prepareLocalData(plan);
    onExit(() => local.stop());
  }
  process.env.TABLE_NAME ||= DEFAULT_TABLE;
  process.env.LOG_LEVEL ||= 'silent';

  // stdout is the function's result alone: whatever else writes there (its logger) goes to stderr.
  const printResult = stdoutForResultOnly();
  const handlers = await loadFunctionHandlers();
  let result: unknown;
  try {
    // The event goes in exactly as the file has it, even when it is not an event at all (null, 3, []).
    result = await handlers[name](event as APIGatewayProxyEventV2, lambdaContext(name, FUNCTION_TIMEOUT_MS, requestIdOf(event)));
  } catch (error) {
    fail(`the ${name} function threw: ${escapeText(error instanceof Error ? `${error.name}: ${error.message}` : String(error))}`);
  }
  await printResult(JSON.stringify(result ?? null, null, 2) + '\n');
});

/** Where JSON text breaks, without quoting it (V8's own message may, and an event holds a token). */
function jsonProblem(error: Error): string {
  const at = /\(line (\d+) column (\d+)\)/.exec(error.message);
  if (at) return `line ${at[1]} column ${at[2]}`;
  if (error.message.includes('Unexpected end of JSON input')) return 'it ends before its value does';
  return 'an unexpected character';
}

function requestIdOf(event: unknown): string {
  const id = (event as { requestContext?: { requestId?: unknown } } | null)?.requestContext?.requestId;
  return typeof id === 'string' ? id : 'invoke';
}

/** Sends every later write to stdout to stderr instead, and returns the one way left to stdout. */
function stdoutForResultOnly(): (text: string) => Promise<void> {
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  return (text) => new Promise((resolve) => write(text, () => resolve()));
}
