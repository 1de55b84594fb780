import { findBundledFunctions, loadBundledHandlers } from './local/bundled-handlers.ts';
import { loadFunctionHandlers, startLocalServer } from './local/server.ts';
import type { CommandSpec } from './cli/args.ts';
import { fail } from './cli/errors.ts';
import { DEMO_SNAPSHOT, inputFile } from './cli/paths.ts';
import { onExit, runCommand, whileInterruptible } from './cli/run.ts';
import { counted, escapeText, reportLine } from './cli/text.ts';
import { endpointSetting, idValue, portValue } from './cli/values.ts';

/**
 * npm start: DynamoDB Local in memory (or DYNAMODB_ENDPOINT), the table, a snapshot imported,
 * the functions behind a local API Gateway on 127.0.0.1, and a demo token to call it with.
 * Runs until Ctrl-C, SIGTERM or SIGHUP (to npm or to node), then stops all it started.
 */
const START: CommandSpec = {
  name: 'npm start',
  usage: ['npm start -- [--port <port>] [--data <snapshot.json>] [--user <id>] [--bundled]'],
  about: [
    'Starts DynamoDB Local in memory (or uses DYNAMODB_ENDPOINT), creates the table, imports the snapshot,',
    'serves the API on http://127.0.0.1:<port> and prints a demo token with a curl line to try.',
    'Ctrl-C, SIGTERM or SIGHUP stops the API, and DynamoDB Local if it started it.',
  ].join('\n'),
  options: {
    port: { type: 'string', value: '<port>', help: 'the port on 127.0.0.1, 0 to 65535 (0: any free one); default 3000' },
    data: { type: 'string', value: '<snapshot.json>', help: 'the snapshot to import; default data/demo-snapshot.json' },
    user: { type: 'string', value: '<id>', help: "the demo token's user; default the snapshot's first user in a team" },
    bundled: { type: 'boolean', help: 'serve the bundles `npm run synth` wrote to cdk.out (what is deployed)' },
  },
  environment: {
    TABLE_NAME: 'the table (default team-resources), created when missing',
    DYNAMODB_ENDPOINT: 'a running DynamoDB-compatible endpoint to use instead of starting DynamoDB Local',
  },
};

const CDK_OUT = new URL('../cdk.out', import.meta.url).pathname;

await runCommand(START, async (line) => {
  const port = portValue('--port', line.option('port') ?? '3000');
  const user = line.option('user');
  const userId = user === undefined ? undefined : idValue('--user', user);
  const data = line.option('data');
  const dataFile = data === undefined ? DEMO_SNAPSHOT : await inputFile(data, '--data');
  const givenEndpoint = endpointSetting(); // a malformed DYNAMODB_ENDPOINT is said before anything starts
  const bundled = line.flag('bundled');
  if (bundled) {
    try {
      findBundledFunctions(CDK_OUT);
    } catch (error) {
      fail(`--bundled: ${(error as Error).message}`);
    }
  }

  // The port first: one in use is said at once, before DynamoDB Local is started in vain.
  const server = await startLocalServer({ port }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'EADDRINUSE') fail(`port ${port} is already in use on 127.0.0.1: stop what uses it, or choose another with --port`);
    if (error.code === 'EACCES') fail(`port ${port} needs privileges this user does not have: choose one above 1023 with --port`);
    throw error;
  });
  onExit(() => server.close());

  // The SDK, the import library and the table code load only now: --help and usage errors answer at once.
  const { progressDisplay, readSnapshotFile } = await import('./import/snapshot-file.ts');
  const { prepareLocalData } = await import('./local/local-data.ts');
  const { createToken } = await import('./tokens/tokens.ts');
  const plan = (await readSnapshotFile(dataFile, { report: reportLine, progress: progressDisplay() })) ?? fail();
  // The demo token: every ability, for the chosen user or the first one who is in a team.
  const demoUser = userId === undefined
    ? plan.users.find((u) => u.teams.length > 0)
    : (plan.users.find((u) => u.id === userId) ?? fail(`--user ${userId} is not a user of the snapshot`));

  // A DynamoDB Local started here is in memory: stopped part-way, nothing of the import is left. DYNAMODB_ENDPOINT's table stays.
  if (givenEndpoint) {
    whileInterruptible(() => 'the import into DYNAMODB_ENDPOINT\'s table may have been interrupted: every team is whole, as it was or as the snapshot has it; start again to complete it');
  }
  const local = await prepareLocalData(plan);
  onExit(() => local.stop());
  const { doc, tableName, endpoint, summary } = local;
  const secret = demoUser && (await createToken(doc, tableName, { userId: demoUser.id, abilities: ['*'], name: 'npm start demo', expiresAt: null }));

  // The functions read their configuration (TABLE_NAME, DYNAMODB_ENDPOINT) when loaded: now.
  server.serve(bundled ? await loadBundledHandlers(CDK_OUT) : await loadFunctionHandlers());

  const team = demoUser && plan.teams.find((t) => demoUser.teams.includes(t.id));
  const lines = [
    '',
    `Team Resources API on ${server.url}  (table ${escapeText(tableName)} at ${escapeText(endpoint)})`,
    ...(bundled ? ['serving the bundles in cdk.out'] : []),
    `imported ${counted(summary.teams, 'team')}, ${counted(summary.items, 'project or daemon', 'projects and daemons')}, ${counted(summary.users, 'user')}`,
    '',
  ];
  if (demoUser && secret && team) {
    lines.push(
      `demo token for user ${demoUser.id} (${escapeText(demoUser.name || 'unnamed')}), all abilities; shown once:`,
      `  ${secret}`,
      '',
      'try:',
      // Quoted: an unquoted ? is a glob (zsh stops at "no matches found").
      `  curl -s -H "Authorization: Bearer ${secret}" '${server.url}/api/${encodeURIComponent(team.slug)}/projects?per_page=5'`,
    );
  } else {
    lines.push('no user of the snapshot is in a team, so no demo token was made');
  }
  // What a stop stops: DynamoDB Local only when this command started it; DYNAMODB_ENDPOINT's is left as it is.
  lines.push('', local.startedHere
    ? 'Ctrl-C (or SIGTERM, SIGHUP) stops the API and DynamoDB Local.'
    : 'Ctrl-C (or SIGTERM, SIGHUP) stops the API; DynamoDB at DYNAMODB_ENDPOINT keeps running, with the table and data.', '');
  process.stdout.write(lines.join('\n') + '\n');
}, { serve: true });
