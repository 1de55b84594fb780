import { parseArgs } from 'node:util';
import { createToken } from '../shared/store/tokens.ts';
import { ensureTable } from '../shared/store/table.ts';
import { importSnapshot } from '../shared/store/importer.ts';
import { createDocumentClient } from '../shared/store/client.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from './lib/dynamodb-local.ts';
import { loadFunctionHandlers, startLocalServer } from './lib/local-server.ts';
import { progressReporter } from './lib/progress.ts';
import { readSnapshotFile } from './lib/snapshot-file.ts';

/**
 * npm start: DynamoDB Local in memory (or DYNAMODB_ENDPOINT), the table, a snapshot imported,
 * the three functions behind a local API Gateway on 127.0.0.1, and a demo token to call it with.
 */
const DEMO_SNAPSHOT = new URL('../data/demo-snapshot.json', import.meta.url).pathname;

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '3000' },
    data: { type: 'string', default: DEMO_SNAPSHOT },
    user: { type: 'string' },
  },
});
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) await exit(`--port must be a port number, not "${values.port}"`);

const plan = await readSnapshotFile(values.data);
if (!plan) process.exit(1);

let dynamo: DynamoDbLocal | undefined;
let stopServer: (() => Promise<void>) | undefined;
let stopping = false;
async function shutdown(code: number) {
  if (stopping) return;
  stopping = true;
  await stopServer?.();
  await dynamo?.stop();
  process.exit(code);
}
process.once('SIGINT', () => void shutdown(0));
process.once('SIGTERM', () => void shutdown(0));

let endpoint = process.env.DYNAMODB_ENDPOINT?.trim();
if (!endpoint) {
  process.stderr.write('starting DynamoDB Local (in memory)...\n');
  dynamo = await startDynamoDbLocal().catch((error: Error) => exit(error.message));
  endpoint = dynamo.endpoint;
}
const tableName = process.env.TABLE_NAME?.trim() || 'team-resources';
// The functions read their configuration from the environment, as on Lambda.
process.env.TABLE_NAME = tableName;
process.env.DYNAMODB_ENDPOINT = endpoint;

const doc = createDocumentClient({ endpoint, maxAttempts: 8, requestTimeoutMs: 30_000 });
await ensureTable(doc, tableName);
const summary = await importSnapshot(doc, tableName, plan, { onProgress: progressReporter() });

// The demo token: every ability, for the chosen user or the first one who is in a team.
const user = values.user ? plan.users.find((u) => u.id === Number(values.user)) : plan.users.find((u) => u.teams.length > 0);
if (values.user && !user) await exit(`--user ${values.user} is not a user of the snapshot`);
const secret = user && (await createToken(doc, tableName, { userId: user.id, abilities: ['*'], name: 'npm start demo', expiresAt: null }));

const server = await startLocalServer({ handlers: await loadFunctionHandlers(), port }).catch((error: NodeJS.ErrnoException) =>
  exit(error.code === 'EADDRINUSE' ? `port ${port} is already in use (try --port 4010)` : error.message),
);
stopServer = server.close;

const team = user && plan.teams.find((t) => user.teams.includes(t.id));
process.stdout.write(`
Team Resources API on ${server.url}  (table ${tableName} at ${endpoint})
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
  await dynamo?.stop();
  process.exit(1);
}
