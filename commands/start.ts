import { findBundledFunctions } from './local/bundled-handlers.ts';
import { startLocalServer } from './local/server.ts';
import { fail, usageError } from './cli/errors.ts';
import { DEMO_SNAPSHOT, inputFile } from './cli/paths.ts';
import { command, onExit, runCommand, whileInterruptible } from './cli/run.ts';
import { hidePasswordFromProcessList, sourceOptions } from './cli/source.ts';
import { counted, escapeText } from './cli/text.ts';
import { checkLogLevel, endpointSetting, idValue, portValue } from './cli/values.ts';

const CDK_OUT = new URL('../cdk.out', import.meta.url).pathname;

/** A value as a shell reads it back: plain when it is safe unquoted, else in single quotes. */
const shellWord = (value: string) => (/^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`);

export const npmStart = command(
  {
    name: 'npm start',
    usage: [
      'npm start -- [--port <port>] [--data <snapshot.json>] [--user <id>] [--bundled]',
      'npm start -- --source <url> [--user <id>] [--port <port>] [--mapping <mapping.json>] ' +
        '[--timezone <zone>] [--bundled]',
    ],
    about: `
Starts DynamoDB Local in memory (or uses DYNAMODB_ENDPOINT), creates the table, imports the snapshot,
serves the API on http://127.0.0.1:<port>, and prints a demo token, a curl line and an export line
for the other commands. Until the API is ready, requests wait (a snapshot) or are answered 503 with
Retry-After (a source's first pass).
With --source, the table is kept in step with that PostgreSQL or MySQL/MariaDB database instead of
a snapshot (prepare it once with npm run sync -- setup), and the demo token is its user's.
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
        help: "the demo token's user; default the first user in a team",
      },
      source: {
        type: 'string',
        value: '<url>',
        help: 'serve a database kept in step by the sync instead of a snapshot: postgres://… or mysql://…',
      },
      mapping: {
        type: 'string',
        value: '<mapping.json>',
        help: "with --source: queries for a schema that differs from Laravel's",
      },
      timezone: {
        type: 'string',
        value: '<zone>',
        help: "with --source: the zone of the source's times without one; default UTC",
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
    if (values.source !== undefined && values.data !== undefined) usageError('give --data or --source, not both');
    for (const option of ['mapping', 'timezone'] as const) {
      if (values[option] !== undefined && values.source === undefined) usageError(`--${option} goes with --source`);
    }
    const synced = values.source === undefined ? undefined : await sourceOptions(values);
    // Other users of the machine see the command line (ps): the URL shows without its password.
    if (synced) hidePasswordFromProcessList(synced.source.url, synced.source.redacted);
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

    // The port first: one in use is said at once. Until the API is ready, requests wait for a snapshot,
    // or get 503 and Retry-After during a sync's first pass.
    const server = await startLocalServer({ port, untilServed: synced ? 'refuse' : 'hold' }).catch(
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'EADDRINUSE')
          fail(`port ${port} is already in use on 127.0.0.1: stop what uses it, or choose another with --port`);
        if (error.code === 'EACCES')
          fail(`port ${port} needs privileges this user does not have: choose one above 1023 with --port`);
        throw error;
      },
    );
    onExit(() => server.close());

    // The SDK and the import library load only now: --help and usage errors answer at once.
    const { createToken } = await import('./tokens/tokens.ts');
    const prepared = synced ? await syncedData(synced, userId) : await snapshotData(dataFile, userId, givenEndpoint);
    const { doc, tableName, endpoint, dynamo, demoUser, team, imported } = prepared;
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

    const settings = {
      API: server.url,
      TOKEN: secret,
      DYNAMODB_ENDPOINT: endpoint,
      TABLE_NAME: tableName,
      AWS_REGION: dynamo?.region,
    };
    const lines = [
      '',
      `Team Resources API on ${server.url}`,
      ...(values.bundled ? ['serving the bundles in cdk.out'] : []),
      imported,
      '',
    ];
    if (secret && team) {
      const teamSegment = encodeURIComponent(team.slug ?? team.id);
      lines.push(
        `demo token for user ${demoUser.id} (${escapeText(demoUser.name || 'unnamed')}), all abilities; shown once:`,
        `  ${secret}`,
        '',
        'try:',
        // Quoted: an unquoted ? is a glob (zsh stops at "no matches found").
        `  curl -s -H "Authorization: Bearer ${secret}" '${server.url}/api/${teamSegment}/projects?per_page=5'`,
      );
    } else {
      lines.push(`no user of the ${synced ? 'source' : 'snapshot'} is in a team, so no demo token was made`);
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
    process.stdout.write(`${lines.join('\n')}\n`);
  },
);

/** The table with a snapshot imported (the demo data unless --data), and the demo token's user and team. */
async function snapshotData(dataFile: string, userId: number | undefined, givenEndpoint: string | undefined) {
  const { readSnapshotFile } = await import('./import/snapshot-file.ts');
  const { progressDisplay } = await import('./cli/progress.ts');
  const { prepareLocalData } = await import('./local/local-data.ts');
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
  const items = counted(summary.items, 'project or daemon', 'projects and daemons');
  return {
    doc,
    tableName,
    endpoint,
    dynamo,
    demoUser: demoUser && { id: demoUser.id, name: demoUser.name },
    team: demoUser && plan.teams.find((t) => demoUser.teams.includes(t.id)),
    imported: `imported ${counted(summary.teams, 'team')}, ${items}, ${counted(summary.users, 'user')}`,
  };
}

/**
 * The table kept in step with the source by the sync (its first full pass done), and the demo
 * token's user and team.
 */
async function syncedData(synced: Awaited<ReturnType<typeof sourceOptions>>, userId: number | undefined) {
  const { prepareLocalSync } = await import('./local/local-sync.ts');
  const { userTeams } = await import('./tokens/tokens.ts');
  const { getItems, queryAll } = await import('../shared/write/reads.ts');
  const { readTeamRecord } = await import('../shared/write/items.ts');
  const { memberPartition, TEAMS_PARTITION, teamRecordKey, userKey } = await import('../shared/table/keys.ts');
  const prepared = await prepareLocalSync(synced.source, synced.mapping, synced.timezone, synced.repeat);
  const { doc, tableName } = prepared;
  const teamIds = (await queryAll(doc, tableName, TEAMS_PARTITION, { keysOnly: true })).map((key) => Number(key.sk));
  // The token's user: the one asked for, else the first member of the first team that has one.
  let demoId = userId;
  for (const teamId of demoId === undefined ? teamIds : []) {
    const [record] = await getItems(doc, tableName, [teamRecordKey(teamId)]);
    if (!record) continue;
    const partition = memberPartition(teamId, readTeamRecord(record).membersGeneration);
    const [member] = await queryAll(doc, tableName, partition, { keysOnly: true });
    if (member) {
      demoId = Number(member.sk);
      break;
    }
  }
  const teams = demoId === undefined ? undefined : await userTeams(doc, tableName, demoId);
  if (userId !== undefined && !teams?.length) fail(`--user ${userId} is not a member of any team of the source`);
  const [head] = teams?.length ? await getItems(doc, tableName, [teamRecordKey(teams[0]!)]) : [];
  const [user] = demoId === undefined ? [] : await getItems(doc, tableName, [userKey(demoId)]);
  return {
    ...prepared,
    demoUser: demoId === undefined || !head ? undefined : { id: demoId, name: user?.name as string | undefined },
    team: head && { id: Number(head.team_id), slug: head.slug as string | undefined },
    imported: `synced ${counted(teamIds.length, 'team')} from ${synced.source.redacted}; changes there are served here`,
  };
}

if (import.meta.main) await runCommand(npmStart);
