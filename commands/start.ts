import { parseArgs } from 'node:util';
import { createToken } from './tokens/tokens.ts';
import { DEMO_SNAPSHOT, prepareLocalData, type LocalData } from './local/local-data.ts';
import { loadBundledHandlers } from './local/bundled-handlers.ts';
import { loadFunctionHandlers, startLocalServer } from './local/server.ts';
import { progressDisplay, readSnapshotFile } from './import/snapshot-file.ts';

/**
 * npm start: DynamoDB Local in memory (or DYNAMODB_ENDPOINT), the table, a snapshot imported,
 * the three functions behind a local API Gateway on 127.0.0.1, and a demo token to call it with.
 */
const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '3000' },
    data: { type: 'string', default: DEMO_SNAPSHOT },
    user: { type: 'string' },
    // Serve the bundles `npm run synth` wrote to cdk.out, exactly what the stack deploys.
    bundled: { type: 'boolean', default: false },
  },
});
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) await exit(`--port must be a port number, not "${values.port}"`);

const plan = await readSnapshotFile(values.data, { progress: progressDisplay() });
if (!plan) process.exit(1);

let local: LocalData | undefined;
let stopServer: (() => Promise<void>) | undefined;
let stopping = false;
async function shutdown(code: number) {
  if (stopping) return;
  stopping = true;
  await stopServer?.();
  await local?.stop();
  process.exit(code);
}
process.once('SIGINT', () => void shutdown(0));
process.once('SIGTERM', () => void shutdown(0));

local = await prepareLocalData(plan).catch((error: Error) => exit(error.message));
const { doc, tableName, endpoint, summary } = local;

// The demo token: every ability, for the chosen user or the first one who is in a team.
const user = values.user ? plan.users.find((u) => u.id === Number(values.user)) : plan.users.find((u) => u.teams.length > 0);
if (values.user && !user) await exit(`--user ${values.user} is not a user of the snapshot`);
const secret = user && (await createToken(doc, tableName, { userId: user.id, abilities: ['*'], name: 'npm start demo', expiresAt: null }));

const handlers = values.bundled
  ? await loadBundledHandlers(new URL('../cdk.out', import.meta.url).pathname).catch((error: Error) => exit(error.message))
  : await loadFunctionHandlers();
const server = await startLocalServer({ handlers, port }).catch((error: NodeJS.ErrnoException) =>
  exit(error.code === 'EADDRINUSE' ? `port ${port} is already in use (try --port 4010)` : error.message),
);
stopServer = server.close;

const team = user && plan.teams.find((t) => user.teams.includes(t.id));
process.stdout.write(`
Team Resources API on ${server.url}  (table ${tableName} at ${endpoint})${values.bundled ? '\nserving the bundles in cdk.out' : ''}
imported ${summary.teams} teams, ${summary.items} projects and daemons, ${summary.users} users
`);
if (secret && team) {
  process.stdout.write(`
demo token for user ${user.id} (${user.name || 'unnamed'}), all abilities; shown once:
  ${secret}

try:
  curl -s -H "Authorization: Bearer ${secret}" ${server.url}/api/${encodeURIComponent(team.slug)}/projects?per_page=5
`);
} else {
  process.stdout.write('\nno user of the snapshot is in a team, so no demo token was made\n');
}
process.stdout.write('\nCtrl-C stops the API and DynamoDB Local.\n\n');

/** Says what went wrong, stops DynamoDB Local, and exits non-zero. */
async function exit(message: string): Promise<never> {
  process.stderr.write(`${message}\n`);
  await local?.stop();
  process.exit(1);
}
