import { describeDatabaseError, fail, placeText } from './cli/errors.ts';
import { inputFile } from './cli/paths.ts';
import { command, runCommand, TABLE_ENVIRONMENT, whileInterruptible } from './cli/run.ts';
import { counted, escapeText, reportLine } from './cli/text.ts';

/** npm run import -- file.json: validates the whole snapshot (pass 1), then imports it (pass 2). */
const IMPORT = {
  name: 'npm run import',
  usage: ['npm run import -- <snapshot.json> [--allow-plain-tokens]'],
  about: `
Validates the whole snapshot, then imports it into the table TABLE_NAME names, locally or in AWS.
An invalid snapshot is rejected whole, each problem named, and nothing is written. The endpoint is
DYNAMODB_ENDPOINT, else AWS_ENDPOINT_URL_DYNAMODB or AWS_ENDPOINT_URL, else AWS's in AWS_REGION;
a local one's table is created when missing. A table on AWS (no endpoint set, or one of AWS's
hosts) refuses plain-text tokens unless --allow-plain-tokens.`,
  options: {
    'allow-plain-tokens': {
      type: 'boolean',
      help: 'import plain-text `token` entries into a table on AWS too (their secrets are in the file)',
    },
  },
  environment: TABLE_ENVIRONMENT,
  positionals: ['<snapshot.json>'],
} as const;

/** What an import stopped while writing leaves (docs/contract.md, section 7). */
const LEFT_WHOLE = 'every team is whole, as it was or as the snapshot has it; run the same import again to complete it';

export const npmRunImport = command(IMPORT, async ({ positionals, values }) => {
  const file = await inputFile(positionals[0]!, 'the snapshot');
  // Loaded once the command line has been found right, so --help and usage errors answer at once.
  const { databaseClient } = await import('./cli/database.ts');
  const { ensureTable } = await import('./store/table.ts');
  const { readSnapshotFile } = await import('./import/snapshot-file.ts');
  const { importSnapshot, ImportRejected } = await import('./import/importer.ts');
  const { progressDisplay } = await import('./cli/progress.ts');
  const { tableName, place, doc, bulk, resolvedPlace, writesSent } = databaseClient();

  // The import library: pass 1 streams and validates the file (it reports the problems it finds),
  // pass 2 streams it again and imports it; one progress display for both.
  const progress = progressDisplay();
  const log = (line: string) => {
    progress.stop();
    reportLine(line); // escaped there
  };
  // What a stop leaves (contract, section 7): before its first write request, an import has written nothing.
  let validating = true;
  const leaves = () => (writesSent() > 0 ? LEFT_WHOLE : `nothing was written to ${tableName}`);
  // A signal (Ctrl-C, a closed terminal) gives the terminal back and says what it leaves.
  whileInterruptible((signal) => {
    if (writesSent() > 0) return `import into ${tableName} interrupted (${signal}): ${LEFT_WHOLE}`;
    const when = validating ? 'while validating the snapshot' : 'before it wrote';
    return `import interrupted (${signal}) ${when}: ${leaves()}`;
  });
  const snapshot = (await readSnapshotFile(file, progress)) ?? fail();
  // Refused before anything reaches AWS: a plain secret in a file is development data (contract, section 7).
  const plain = snapshot.tokens.filter((token) => token.plain);
  if (place.onAws && plain.length > 0 && !values['allow-plain-tokens']) {
    const held = `the snapshot holds ${counted(plain.length, 'plain-text token')}, whose secrets are in the file`;
    const refused = `an import into a table on AWS (${placeText(await resolvedPlace())}) refuses them`;
    fail(
      [
        escapeText(`${held}; ${refused}`),
        ...plain.slice(0, 50).map((token) => `  tokens[${token.index}] (user ${token.userId})`),
        ...(plain.length > 50 ? [`  … and ${counted(plain.length - 50, 'more')}`] : []),
        'pass --allow-plain-tokens to import them all the same',
      ].join('\n'),
    );
  }
  validating = false;
  try {
    // A local endpoint's table is made here when missing; AWS's is the stack's (docs/deploy.md).
    if (!place.onAws) await ensureTable(doc, tableName);
    const summary = await importSnapshot(doc, tableName, snapshot, { onProgress: progress.importing, log, bulk });
    progress.stop();
    const items = counted(summary.items, 'project or daemon', 'projects and daemons');
    const people = `${counted(summary.users, 'user')} and ${counted(summary.tokens, 'token')}`;
    const teams = `${counted(summary.teams, 'team')} (${items})`;
    process.stdout.write(`imported ${teams}, ${people} into ${escapeText(tableName)}\n`);
  } catch (error) {
    progress.stop();
    if (error instanceof ImportRejected) {
      fail(
        [
          `the snapshot cannot be imported into ${escapeText(tableName)}; nothing was written:`,
          ...error.problems.map((p) => `  ${escapeText(p)}`),
        ].join('\n'),
      );
    }
    // The database failed under the import: say what that leaves, as an interruption does.
    const database = describeDatabaseError(error);
    if (database) fail(`${escapeText(database)}\n${escapeText(leaves())}`);
    throw error;
  }
});

if (import.meta.main) await runCommand(npmRunImport);
