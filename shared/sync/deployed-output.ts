import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { METRICS_NAMESPACE, STACK_DIMENSION } from '../metrics.ts';
import { SYNC_METRICS, type SyncMetricValues } from './metrics.ts';

/**
 * What the deployed sync says (deployed.ts), through Powertools for AWS Lambda: its Logger for the
 * lines (one JSON object a line: level, message, timestamp, service, then the invocation's keys and
 * the line's own fields) and its Metrics for the metric values (embedded metric format documents,
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
 * Both write to stdout (errors to stderr) through a Console of their own, which Lambda's Text log
 * format passes to CloudWatch Logs as written (docs/operations.md). The API's functions keep their
 * own logger (shared/api/log.ts): Powertools' Logger would cost their cold start, which the sync's
 * once-a-minute invocations do not mind.
 */
const SYNC_SERVICE = 'team-resources-sync';

type SyncLogLevel = 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'CRITICAL' | 'SILENT';

export function syncOutput(options: { logLevel: SyncLogLevel; stack: string }) {
  const logger = new Logger({ serviceName: SYNC_SERVICE, logLevel: options.logLevel });
  const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SYNC_SERVICE });
  // Powertools makes the service a default dimension; the stack's metrics carry its name alone, as
  // the API's do, which is what the stack's alarms and dashboard name (infra/sync-metrics.ts).
  metrics.clearDefaultDimensions();
  metrics.setDefaultDimensions({ [STACK_DIMENSION]: options.stack });
  // The stack provisions no concurrency: a container's first invocation is the one that waited on init.
  let coldStart = true;

  return {
    /**
     * A logger for one invocation: a child of the function's, with the invocation's keys as its own.
     * Not the function's logger given each invocation's context (Powertools' addContext), which keeps
     * it on that logger: two invocations at once in one process (the handover test runs them so)
     * would share it.
     */
    invocationLog(context: Pick<Context, 'awsRequestId'>, keys: Record<string, string>): Logger {
      const child = logger.createChild({
        persistentKeys: { cold_start: coldStart, function_request_id: context.awsRequestId, ...keys },
      });
      coldStart = false;
      return child;
    },

    /** One document of the values given (the sync's, or a source error's); the others are left out. */
    publish(values: SyncMetricValues): void {
      let stored = false;
      for (const { Name, Unit } of SYNC_METRICS) {
        const value = values[Name];
        if (value === undefined) continue;
        metrics.addMetric(Name, Unit, value);
        stored = true;
      }
      // Stored and published at once, synchronously: concurrent invocations never mix their values.
      if (stored) metrics.publishStoredMetrics();
    },
  };
}
