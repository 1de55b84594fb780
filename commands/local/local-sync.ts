import { fail } from '../cli/errors.ts';
import type { TableRef } from '../../shared/write/writer.ts';
import { failNow, onExit, whileInterruptible } from '../cli/run.ts';
import { withRepeat } from '../cli/source.ts';
import { reportLine } from '../cli/text.ts';
import { progressDisplay } from '../cli/progress.ts';
import { prepareLocalTable } from './local-data.ts';
import type { Mapping, SourceShape } from '../../shared/sync/mapping.ts';
import type { SourceUrl } from '../../shared/sync/source/url.ts';

/**
 * A local table (local-data.ts, prepareLocalTable) kept in step with a source database (npm start --
 * --source): the sync runs into it until the command ends. Resolves once the first full pass is done.
 */
export async function prepareLocalSync(
  source: SourceUrl,
  mapping: (shape: SourceShape) => Mapping,
  timezone: string,
  repeat = '',
) {
  const { checkSource, runSync, SyncRefused } = await import('../../shared/sync/run.ts');
  // Every hint that names a command (setup, again after a migration) names the --mapping given too.
  const say = (line: string) => void reportLine(withRepeat(line, repeat));
  const settings = { source, mapping, timezone, say, metric: () => {} };
  // The source first: credentials it refuses, a schema that lacks something, a log it cannot give are
  // said in seconds, before DynamoDB Local starts.
  const table = { tableName: process.env.TABLE_NAME?.trim() || 'team-resources' } as TableRef;
  await checkSource({ ...settings, table }).catch((error) => {
    if (error instanceof SyncRefused) fail(withRepeat(error.message, repeat));
    throw error;
  });
  const { endpoint, tableName, doc, dynamo } = await prepareLocalTable();
  reportLine(`syncing ${tableName} from ${source.redacted}...`);

  const stop = new AbortController();
  const progress = progressDisplay();
  let ready: () => void;
  let passed = false;
  let teams = { done: 0, total: 0 };
  const firstPass = new Promise<void>((resolve) => (ready = resolve));
  // A signal before the API is ready stops the first pass: said, with what it leaves.
  whileInterruptible(() => {
    if (passed) return '';
    const left = dynamo
      ? "DynamoDB Local's data was in memory: nothing is left"
      : "each team in DYNAMODB_ENDPOINT's table is whole, as it was or as the source has it";
    return `the first full pass from ${source.redacted} stopped at ${teams.done} of ${teams.total} teams; ${left}`;
  });
  const running = runSync(
    {
      source,
      mapping,
      timezone,
      table: { doc, tableName },
      say: (line) => {
        progress.stop();
        say(line);
      },
      // Its metrics are for CloudWatch; on a laptop the lines it says are enough.
      metric: () => {},
    },
    {
      signal: stop.signal,
      // The first pass alone: later ones (periodic, or after the log was lost) draw no "first full pass".
      onProgress: (p) => {
        if (passed) return;
        teams = { ...p.teams };
        progress.passing(p);
      },
      onReady: () => {
        passed = true;
        progress.stop();
        ready();
      },
    },
  );
  onExit(async () => {
    stop.abort();
    await running.catch(() => {});
  });
  // A sync that ends (the source refuses the credentials it took a minute ago, a second sync) ends the command.
  const ended = running.then(
    () => undefined,
    (error) => {
      const message =
        error instanceof SyncRefused
          ? withRepeat(error.message, repeat)
          : `the sync failed: ${(error as Error).message}`;
      failNow(message);
      throw error;
    },
  );
  await Promise.race([firstPass, ended]);
  return { endpoint, tableName, doc, dynamo };
}
