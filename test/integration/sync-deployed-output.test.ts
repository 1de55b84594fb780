import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRICS_NAMESPACE, STACK_DIMENSION } from '../../shared/metrics.ts';
import { SCHEDULER_INPUT } from '../../shared/sync/deployed-settings.ts';
import { syncHandler } from '../../shared/sync/deployed.ts';
import { acquireSyncLease } from '../../shared/write/lease.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { emfProblems } from '../support/emf.ts';
import { captureOutput } from '../support/output-lines.ts';

/**
 * What the deployed sync's function writes (shared/sync/deployed-output.ts: Powertools' Logger and
 * Metrics), as Lambda would send it to CloudWatch Logs: one JSON object a line, each line of an
 * invocation with its request id, cold start and the schedule's fields; the metrics as embedded
 * metric format documents in the stack's namespace, by the Stack dimension alone. These invocations
 * need no source database: one is refused before it connects, the other leaves the table to a sync
 * that runs elsewhere (test/integration/sync-deployed.test.ts runs whole syncs).
 */
const STACK = 'TeamResourcesStaging';
const PASSWORD = 'not-to-be-seen';
let table: TestTable;
let output: ReturnType<typeof captureOutput>;

const event = (executionId: string) =>
  Object.fromEntries(
    Object.entries(SCHEDULER_INPUT).map(([key, keyword]) => [
      key,
      {
        '<aws.scheduler.schedule-arn>': 'arn:aws:scheduler:eu-west-1:123456789012:schedule/default/TeamResourcesSync',
        '<aws.scheduler.scheduled-time>': '2026-11-28T10:00:00Z',
        '<aws.scheduler.execution-id>': executionId,
        '<aws.scheduler.attempt-number>': '1',
      }[keyword],
    ]),
  );
const context = (awsRequestId: string) =>
  ({ awsRequestId, getRemainingTimeInMillis: () => 900_000 }) as unknown as Context;
const linesOf = (requestId: string) => output.lines.filter((line) => line.function_request_id === requestId);

beforeAll(async () => {
  table = await freshTable();
  output = captureOutput();
});
afterAll(() => output?.stop());

describe('a source the sync cannot use', () => {
  it('ends the invocation refused, in one ERROR line with the schedule and no password, and one SyncSourceErrors metric', async () => {
    const handler = syncHandler({
      env: {
        TABLE_NAME: table.tableName,
        DYNAMODB_ENDPOINT: table.endpoint,
        SOURCE_DATABASE_URL: `oracle://laravel:${PASSWORD}@db.internal:1521/forge`,
        STACK_NAME: STACK,
      },
    });
    const before = output.lines.length;
    const result = await handler(event('exec-1'), context('request-1'));
    expect(result).toMatchObject({ outcome: 'refused', reason: expect.stringContaining('postgres://') });

    const [line, ...more] = linesOf('request-1');
    expect(more).toEqual([]);
    expect(line).toEqual({
      level: 'ERROR',
      message: result.outcome === 'refused' ? result.reason : '',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      service: 'team-resources-sync',
      sampling_rate: 0, // Powertools': no DEBUG lines sampled in
      cold_start: true,
      function_request_id: 'request-1',
      scheduled_time: '2026-11-28T10:00:00Z',
      execution_id: 'exec-1',
      attempt: '1',
    });

    const metrics = output.texts.slice(before).filter((text) => text.includes('"_aws"'));
    expect(metrics).toHaveLength(1);
    expect(emfProblems(metrics[0]!)).toEqual([]);
    const document = JSON.parse(metrics[0]!);
    expect(document._aws.CloudWatchMetrics).toEqual([
      {
        Namespace: METRICS_NAMESPACE,
        Dimensions: [[STACK_DIMENSION]],
        Metrics: [{ Name: 'SyncSourceErrors', Unit: 'Count' }],
      },
    ]);
    expect(document).toMatchObject({ [STACK_DIMENSION]: STACK, SyncSourceErrors: 1 });
    expect(document).not.toHaveProperty('service');
    expect(output.texts.slice(before).join('\n')).not.toContain(PASSWORD);

    // The function's next invocation is warm.
    await handler(event('exec-2'), context('request-2'));
    expect(linesOf('request-2').map((l) => l.cold_start)).toEqual([false]);
  });
});

describe('a sync that runs elsewhere', () => {
  it("is left the table, said at INFO with the invocation's keys, and nothing at all at LOG_LEVEL=warn", async () => {
    const lease = await acquireSyncLease(table.doc, table.tableName);
    try {
      const env = {
        TABLE_NAME: table.tableName,
        DYNAMODB_ENDPOINT: table.endpoint,
        SOURCE_DATABASE_URL: 'postgres://laravel@127.0.0.1:1/forge',
        STACK_NAME: STACK,
      };
      const result = await syncHandler({ env })(event('exec-3'), context('request-3'));
      expect(result).toEqual({ outcome: 'left', reason: 'a sync that runs elsewhere' });
      expect(linesOf('request-3')).toEqual([
        expect.objectContaining({
          level: 'INFO',
          message: 'a sync that runs elsewhere holds the lease: this invocation leaves the table to it',
          service: 'team-resources-sync',
          execution_id: 'exec-3',
          holder: expect.stringMatching(/, pid \d+$/),
        }),
      ]);

      const quiet = await syncHandler({ env: { ...env, LOG_LEVEL: 'warn' } })(event('exec-4'), context('request-4'));
      expect(quiet).toEqual(result);
      expect(linesOf('request-4')).toEqual([]);
    } finally {
      await lease.release();
    }
  });
});
