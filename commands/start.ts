import { findBundledFunctions } from './local/bundled-handlers.ts';
import { startLocalServer } from './local/server.ts';
import { fail } from './cli/errors.ts';
import { DEMO_SNAPSHOT, inputFile } from './cli/paths.ts';
import { command, onExit, runCommand, whileInterruptible } from './cli/run.ts';
import { counted, escapeText } from './cli/text.ts';
import { checkLogLevel, endpointSetting, idValue, portValue } from './cli/values.ts';

const CDK_OUT = new URL('../cdk.out', import.meta.url).pathname;

/** A value as a shell reads it back: plain when it is safe unquoted, else in single quotes. */
const shellWord = (value: string) => (/^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`);

export const npmStart = command(
  {
    name: 'npm start',
    usage: ['npm start -- [--port <port>] [--data <snapshot.json>] [--user <id>] [--bundled]'],
    about: `
Starts DynamoDB Local in memory (or uses DYNAMODB_ENDPOINT), creates the table, imports the snapshot,
serves the API on http://127.0.0.1:<port>, and prints a demo token, a curl line and an export line
for the other commands. Requests that come before the API is ready are answered once it is.
Ctrl-C, SIGTERM or SIGHUP stops the API, and DynamoDB Local if it started it.`,
    options: {
      port: {
        type: 'string',
        default: '3000',
        value: '<port>',
        help: 'the port on 127.0.0.1, 0 to 65535 (0: any free one); default 3000',
      },
      data: {
        type: 'string',
        value: '<snapshot.json>',
        help: 'the snapshot to import; default data/demo-snapshot.json',
      },
      user: {
        type: 'string',
        value: '<id>',
        help: "the demo token's user; default the snapshot's first user in a team",
      },
      bundled: { type: 'boolean', help: 'serve the bundles `npm run synth` wrote to cdk.out (what is deployed)' },
    },
    environment: {
      TABLE_NAME: 'the table (default team-resources), created when missing',
      DYNAMODB_ENDPOINT: 'a running DynamoDB-compatible endpoint to use instead of DynamoDB Local',
      LOG_LEVEL: "the functions' log level: trace, debug, info (default), warn, error, critical, silent",
    },
    serve: true,
  },
  async ({ values }) => {
    const port = portValue('--port', values.port);
    const userId = values.user === undefined ? undefined : idValue('--user', values.user);
    const dataFile = values.data === undefined ? DEMO_SNAPSHOT : await inputFile(values.data, '--data');
    const givenEndpoint = endpointSetting(); // malformed settings are said before anything starts
    checkLogLevel();
    if (values.bundled) {
      try {
        findBundledFunctions(CDK_OUT);
      } catch (error) {
        fail(`--bundled: ${(error as Error).message}`);
      }
    }

    // The port first: one in use is said at once; requests are held until the API is ready.
    const server = await startLocalServer({ port }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE')
        fail(`port ${port} is already in use on 127.0.0.1: stop what uses it, or choose another with --port`);
      if (error.code === 'EACCES')
        fail(`port ${port} needs privileges this user does not have: choose one above 1023 with --port`);
      throw error;
    });
    onExit(() => server.close());

    // The SDK and the import library load only now: --help and usage errors answer at once.
    const { readSnapshotFile } = await import('./import/snapshot-file.ts');
    const { progressDisplay } = await import('./import/progress.ts');
    const { prepareLocalData } = await import('./local/local-data.ts');
    const { createToken } = await import('./tokens/tokens.ts');
    const plan = (await readSnapshotFile(dataFile, progressDisplay())) ?? fail();
    const demoUser =
      userId === undefined
        ? plan.users.find((u) => u.teams.length > 0)
        : (plan.users.find((u) => u.id === userId) ?? fail(`--user ${userId} is not a user of the snapshot`));

    // A DynamoDB Local started here is in memory: stopped part-way, nothing is left. DYNAMODB_ENDPOINT's table stays.
    if (givenEndpoint)
      whileInterruptible(() => {
        const left = 'every team is whole, as it was or as the snapshot has it; start again to complete it';
        return `the import into DYNAMODB_ENDPOINT's table may have been interrupted: ${left}`;
      });
    const { doc, tableName, endpoint, summary, dynamo } = await prepareLocalData(plan);
    const secret =
      demoUser &&
      (await createToken(doc, tableName, {
        userId: demoUser.id,
        abilities: ['*'],
        name: 'npm start demo',
        expiresAt: null,
      }));

    // The functions read their configuration (TABLE_NAME, DYNAMODB_ENDPOINT, AWS_REGION) when loaded: now.
    const { functionContainers } = await import('./local/containers.ts');
    const functions = await functionContainers({ bundled: values.bundled ? CDK_OUT : undefined });
    onExit(functions.close);
    server.serve(functions);

    const team = demoUser && plan.teams.find((t) => demoUser.teams.includes(t.id));
    const settings = {
      API: server.url,
      TOKEN: secret,
      DYNAMODB_ENDPOINT: endpoint,
      TABLE_NAME: tableName,
      AWS_REGION: dynamo?.region,
    };
    const items = counted(summary.items, 'project or daemon', 'projects and daemons');
    const lines = [
      '',
      `Team Resources API on ${server.url}`,
      ...(values.bundled ? ['serving the bundles in cdk.out'] : []),
      `imported ${counted(summary.teams, 'team')}, ${items}, ${counted(summary.users, 'user')}`,
      '',
    ];
    if (secret && team) {
      const teamSegment = encodeURIComponent(team.slug);
      lines.push(
        `demo token for user ${demoUser.id} (${escapeText(demoUser.name || 'unnamed')}), all abilities; shown once:`,
        `  ${secret}`,
        '',
        'try:',
        // Quoted: an unquoted ? is a glob (zsh stops at "no matches found").
        `  curl -s -H "Authorization: Bearer ${secret}" '${server.url}/api/${teamSegment}/projects?per_page=5'`,
      );
    } else {
      lines.push('no user of the snapshot is in a team, so no demo token was made');
    }
    lines.push(
      '',
      'for the other commands (npm run token, npm run import) and the README examples, in another shell:',
      `  export ${Object.entries(settings)
        .filter(([, v]) => v)
        .map(([name, value]) => `${name}=${shellWord(escapeText(value))}`)
        .join(' ')}`,
      '',
      dynamo
        ? 'Ctrl-C (or SIGTERM, SIGHUP) stops the API and DynamoDB Local.'
        : 'Ctrl-C (or SIGTERM, SIGHUP) stops the API; DynamoDB at DYNAMODB_ENDPOINT keeps running, ' +
            'with the table and data.',
      '',
    );
    process.stdout.write(lines.join('\n') + '\n');
  },
);

if (import.meta.main) await runCommand(npmStart);
