import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { createDynamoDbClient } from '../table/dynamodb-client.ts';
import { LeaseHeld, readSyncLease } from '../write/lease.ts';
import { readDeployedConfig } from './deployed-config.ts';
import { syncOutput } from './deployed-output.ts';
import { SYNC_HANDOVER_WITHIN_MS, SYNC_MARGIN_MS } from './deployed-settings.ts';
import { takeSuccessorPlace } from './handover.ts';
import { mappingFor } from './mapping.ts';
import { runSync, SyncRefused } from './run.ts';
import { readSecret, SecretError, sourceUrlFromSecret } from './secret.ts';
import { parseSourceUrl, SourceUrlError } from './source/url.ts';

/**
 * The sync as AWS runs it (functions/sync.ts; docs/deploy.md, "The sync"): EventBridge Scheduler
 * invokes the function every minute, and each invocation either syncs or leaves at once.
 *
 * - Nobody holds the sync's lease: this invocation syncs (runSync) until SYNC_MARGIN_MS before
 *   its timeout, announcing that end on the lease.
 * - A holder announced an end within SYNC_HANDOVER_WITHIN_MS: this invocation takes the
 *   successor's place (handover.ts), connects to the source meanwhile, and takes the lease over
 *   the moment the holder gives it back (lease.ts, waitForEndWithinMs). It applies the changes
 *   recorded in between first, then a full pass.
 * - Any other holder (one ending later, a successor already waiting, or a sync run elsewhere
 *   that announced no end): this invocation leaves, after one read of the lease.
 *
 * A source that refuses the run (credentials, schema, setup, a secret that cannot be read, or
 * silence for 30 s) ends the invocation with one log line and a SyncSourceErrors metric; the next
 * invocation, a minute later, tries again, which is what the "source keeps failing" alarm counts.
 *
 * The source comes from the Secrets Manager secret SOURCE_SECRET_ARN names (secret.ts); for local
 * runs and tests, SOURCE_DATABASE_URL stands in for it (deployed-config.ts). What the invocation
 * says, and its metrics, go out through Powertools' Logger and Metrics (deployed-output.ts): one JSON
 * object a line, which Lambda sends to CloudWatch Logs as it is (docs/operations.md).
 */

/** What an invocation did (Lambda discards it for a scheduled invocation; the log says the same). */
export type SyncInvocation =
  | { outcome: 'synced'; heldFrom: number; heldUntil: number; tookOver: boolean }
  | { outcome: 'left'; reason: string }
  | { outcome: 'refused'; reason: string };

interface DeployedSyncOptions {
  /** The function's environment (default: process.env). */
  env?: NodeJS.ProcessEnv;
}

/**
 * The handler Lambda invokes: its configuration read and its logger and metrics made once, a fresh
 * DynamoDB client per invocation.
 */
export function syncHandler(options: DeployedSyncOptions = {}) {
  const config = readDeployedConfig(options.env);
  const output = syncOutput(config);

  return async function handler(event: unknown, context: Context): Promise<SyncInvocation> {
    // Every line of the invocation carries its request id, its cold start and the schedule's fields.
    const log = output.invocationLog(context, scheduleFields(event));
    const until = () => context.getRemainingTimeInMillis() < SYNC_MARGIN_MS;
    const endsAt = Date.now() + context.getRemainingTimeInMillis() - SYNC_MARGIN_MS;

    // Clients of its own: the sync counts its writes at the clients' middleware stacks. The second,
    // in the SDK's adaptive retry mode, is for long streams of writes to one key (shared/write/writer.ts).
    const settings = {
      endpoint: config.dynamodbEndpoint,
      connectionTimeoutMs: 3_000,
      requestTimeoutMs: 10_000,
      maxAttempts: 8,
    };
    const documents = (client: ReturnType<typeof createDynamoDbClient>) =>
      DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
    const doc = documents(createDynamoDbClient(settings));
    const bulk = documents(createDynamoDbClient({ ...settings, retryMode: 'adaptive' }));
    const table = { doc, bulk, tableName: config.tableName };
    try {
      const holder = await readSyncLease(doc, config.tableName);
      if (holder) {
        const endsIn = holder.ends_at === undefined ? undefined : holder.ends_at - Date.now();
        const where = { holder: `${holder.host}, pid ${holder.pid}`, holder_started: iso(holder.started_at) };
        if (endsIn === undefined) {
          // A sync run elsewhere (npm run sync): it keeps the table, and this stack's sync is idle.
          log.info('a sync that runs elsewhere holds the lease: this invocation leaves the table to it', where);
          return { outcome: 'left', reason: 'a sync that runs elsewhere' };
        }
        if (endsIn > SYNC_HANDOVER_WITHIN_MS) {
          log.debug('the running invocation keeps the sync', { ...where, holder_ends: iso(holder.ends_at!) });
          return { outcome: 'left', reason: 'the running invocation ends later' };
        }
        if (!(await takeSuccessorPlace(doc, config.tableName, holder, context.awsRequestId))) {
          log.debug('another invocation waits to take over', where);
          return { outcome: 'left', reason: 'another invocation waits to take over' };
        }
        log.info('taking over from the running invocation when it ends', { holder_ends: iso(holder.ends_at!) });
      }
      if (until()) return { outcome: 'left', reason: 'too little time left' };

      const source = parseSourceUrl(config.sourceUrl ?? sourceUrlFromSecret(await readSecret(config.secretArn!)));
      let heldFrom = 0;
      let heldUntil = 0;
      await runSync(
        {
          source,
          // The mapping file's replacements on Laravel's mapping, as the commands' --mapping.
          mapping: mappingFor(source.engine, config.mapping),
          timezone: config.timezone,
          table,
          say: (line) => log.info(line),
          metric: (values) => output.publish(values),
        },
        {
          until,
          lease: { endsAt, waitForEndWithinMs: SYNC_HANDOVER_WITHIN_MS },
          changesFirst: holder !== undefined,
          giveUpOnSilence: true,
          onLease: (held) => {
            if (held) heldFrom = Date.now();
            else heldUntil = Date.now();
            log.info(held ? 'took the sync over' : 'handed the sync over', { ends: iso(endsAt) });
          },
        },
      );
      return { outcome: 'synced', heldFrom, heldUntil, tookOver: holder !== undefined };
    } catch (error) {
      if (error instanceof SyncRefused && error.cause instanceof LeaseHeld) {
        log.debug('another invocation took the sync first', { reason: error.cause.message });
        return { outcome: 'left', reason: 'another invocation took the sync first' };
      }
      if (error instanceof SyncRefused || error instanceof SecretError || error instanceof SourceUrlError) {
        log.error(error.message);
        // How far behind the sync is, it cannot tell without the source: this error only.
        output.publish({ SyncSourceErrors: 1 });
        return { outcome: 'refused', reason: error.message };
      }
      log.error(`the sync failed: ${(error as Error).name}: ${(error as Error).message}`);
      throw error;
    } finally {
      doc.destroy();
      bulk.destroy();
    }
  };
}

/** The schedule's own words for this invocation (deployed-settings.ts, SCHEDULER_INPUT), for the log. */
function scheduleFields(event: unknown): Record<string, string> {
  if (typeof event !== 'object' || event === null) return {};
  const { scheduledTime, executionId, attemptNumber } = event as Record<string, unknown>;
  return Object.fromEntries(
    Object.entries({ scheduled_time: scheduledTime, execution_id: executionId, attempt: attemptNumber }).filter(
      ([, value]) => typeof value === 'string',
    ),
  ) as Record<string, string>;
}

const iso = (ms: number) => new Date(ms).toISOString();
