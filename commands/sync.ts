import { fail, usageError } from './cli/errors.ts';
import { command, onExit, runCommand, whileInterruptible } from './cli/run.ts';
import { hidePasswordFromProcessList, sourceOptions, withRepeat } from './cli/source.ts';
import { counted, escapeText, reportLine } from './cli/text.ts';

/** npm run sync: keeps the table live from the Laravel service's database (docs/sync.md). */
export const SYNC = {
  name: 'npm run sync',
  usage: [
    'npm run sync -- setup --source <url> [--mapping <mapping.json>]',
    'npm run sync -- --source <url> [--once] [--mapping <mapping.json>] [--timezone <zone>] [--full-pass-every <5m>]',
    'npm run sync -- remove --source <url> [--mapping <mapping.json>]',
  ],
  about: `
Keeps the table TABLE_NAME names in step with a PostgreSQL or MySQL/MariaDB database whose schema
follows Laravel's conventions (or the mapping file's queries): a first full pass, then every change
as it is committed, read from the database's own log (PostgreSQL's logical decoding, MySQL's row
binlog), each served by the API within seconds. Nothing of the sync is in the app's schema or
transactions. Prepare the source once with setup, as the tables' owner; run the sync as a role with
only REPLICATION and SELECT (MySQL: SELECT, REPLICATION SLAVE, REPLICATION CLIENT). The source's
password is never printed nor shown in ps; SOURCE_DATABASE_URL keeps it out of npm's command line
too. Ctrl-C or SIGTERM stops the sync between two writes.

commands:
  setup                      checks the source (schema, privileges, settings) and prepares it
  remove                     removes what setup made (PostgreSQL: the slot and the publication)
  (none)                     syncs until stopped; with --once, one full pass, then exits 0
                             (exit 1 naming the rows the rules refused, if any)`,
  options: {
    source: {
      type: 'string',
      value: '<url>',
      help: 'postgres://user:password@host:5432/db or mysql://… (default: SOURCE_DATABASE_URL)',
    },
    once: { type: 'boolean', help: 'one full pass, then exit 0 (a first load, or a check that the two agree)' },
    mapping: {
      type: 'string',
      value: '<mapping.json>',
      help: "queries and watched tables for a schema that differs from Laravel's",
    },
    timezone: {
      type: 'string',
      value: '<zone>',
      help: "the zone of the source's times without one (Laravel's app.timezone); default UTC",
    },
    'full-pass-every': {
      type: 'string',
      value: '<5m>',
      help:
        'how often a full pass reconciles what the log cannot report (MySQL default 5m, PostgreSQL none); ' +
        'a source whose log cannot be read is then followed by full passes alone',
    },
  },
  environment: {
    SOURCE_DATABASE_URL: 'the source, when --source is not given',
    TABLE_NAME: 'the table (default team-resources)',
    DYNAMODB_ENDPOINT: 'a DynamoDB-compatible endpoint (the table is created there if missing); without it, AWS',
    AWS_REGION: "AWS's region, when no endpoint is set (credentials: the AWS default chain)",
  },
  positionals: ['[<command>]'],
} as const;

const COMMANDS = ['setup', 'remove'] as const;

/** `5m`, `1h`, `90s`: a duration of at least 10 seconds. */
function durationValue(option: string, text: string): number {
  const match = /^([0-9]{1,6})(s|m|h)$/.exec(text);
  const ms = match ? Number(match[1]) * { s: 1_000, m: 60_000, h: 3_600_000 }[match[2] as 's' | 'm' | 'h'] : 0;
  if (ms < 10_000)
    usageError(`${option} must be a duration of at least 10 s, such as 5m or 1h, not "${escapeText(text)}"`);
  return ms;
}

export const npmRunSync = command(SYNC, async ({ values, positionals: [subcommand] }) => {
  if (subcommand !== undefined && !COMMANDS.includes(subcommand as (typeof COMMANDS)[number])) {
    usageError(`unknown command "${escapeText(subcommand)}" (use ${COMMANDS.join(', ')}, or none to sync)`);
  }
  if (subcommand !== undefined) {
    for (const option of ['once', 'timezone', 'full-pass-every'] as const) {
      if (values[option] !== undefined) usageError(`--${option} does not apply to ${subcommand}`);
    }
  }
  const fullPassEveryMs =
    values['full-pass-every'] === undefined ? undefined : durationValue('--full-pass-every', values['full-pass-every']);
  const { source, timezone, mapping, repeat } = await sourceOptions(values);
  // Other users of the machine see the process's command line (ps): the URL shows without its password.
  hidePasswordFromProcessList(source.url, source.redacted);
  const { runSync, SyncRefused } = await import('../shared/sync/run.ts');
  const { syncMetricLine } = await import('../shared/sync/metrics.ts');
  const refused = (error: unknown): never => {
    if (error instanceof SyncRefused) fail(escapeText(withRepeat(error.message, repeat)));
    throw error;
  };

  if (subcommand !== undefined) {
    const { setUpSource, removeSetup } = await import('../shared/sync/setup.ts');
    const work = subcommand === 'setup' ? setUpSource : removeSetup;
    const lines = await work(source, mapping, { say: (line) => void reportLine(line) }).catch(refused);
    process.stdout.write(`${lines.map(escapeText).join('\n')}\n`);
    return;
  }

  const { databaseClient } = await import('./cli/database.ts');
  const { ensureTable } = await import('./store/table.ts');
  const { progressDisplay } = await import('./cli/progress.ts');
  const { tableName, place, doc, bulk } = databaseClient();
  // A local endpoint's table is made here when missing; AWS's is the stack's (docs/deploy.md).
  if (!place.onAws) await ensureTable(doc, tableName);
  const stop = new AbortController();
  const progress = progressDisplay();
  let running: Promise<unknown> | undefined;
  let pass = { teams: { done: 0, total: 0 }, tokens: { done: 0, total: 0 } };
  let ready = false;
  // A signal stops the sync between two writes; it gives its leases back on the way out, and says
  // what it stopped.
  whileInterruptible(() =>
    ready
      ? `the sync of ${tableName} stopped; the table holds what the source held at its last change served`
      : `the first full pass stopped at ${pass.teams.done} of ${pass.teams.total} teams; ` +
        'each team in the table is whole, as it was or as the source has it',
  );
  onExit(async () => {
    stop.abort();
    await running?.catch(() => {});
  });
  reportLine(`syncing ${escapeText(tableName)} from ${source.redacted}${values.once ? ' (one full pass)' : ''}`);
  const run = runSync(
    {
      source,
      mapping,
      timezone,
      table: { doc, bulk, tableName },
      // A hint said while it runs (setup again, after a migration) names the --mapping given too.
      say: (line) => {
        progress.stop();
        reportLine(withRepeat(line, repeat));
      },
      metric: (values) => void process.stdout.write(`${syncMetricLine(values)}\n`),
      ...(fullPassEveryMs !== undefined && { fullPassEveryMs, fullPassesWithoutLog: true }),
    },
    {
      once: values.once === true,
      signal: stop.signal,
      // The first pass alone: later ones (periodic, or after the log was lost) draw no "first full pass".
      onProgress: (p) => {
        if (ready) return;
        pass = p;
        progress.passing(p);
      },
      onReady: () => {
        ready = true;
        progress.stop();
        if (!values.once) reportLine('the first full pass is done: following every change as it is committed');
      },
    },
  );
  running = run;
  const outcome = await run.catch(refused);
  progress.stop();
  if (!values.once) return;
  if (outcome.refused.length > 0) {
    fail(
      [
        `the table ${escapeText(tableName)} holds what the source holds but for ` +
          `${counted(outcome.refused.length, 'row')} the rules refuse, kept at their last good state:`,
        ...outcome.refused.map((line) => `  ${escapeText(line)}`),
      ].join('\n'),
    );
  }
  reportLine(`the table ${escapeText(tableName)} holds what the source holds`);
});

if (import.meta.main) await runCommand(npmRunSync);
