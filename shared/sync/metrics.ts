import { METRICS_NAMESPACE, STACK_DIMENSION } from '../metrics.ts';

/**
 * What the sync reports to CloudWatch (docs/operations.md), one embedded metric format document a
 * line, which CloudWatch Logs turns into metrics as the line arrives
 * (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html):
 * how far behind the source it is, the changes it applied, the items it wrote, the rows it refused,
 * the source's failures, and how much log the source keeps for it. Each carries the stack's name as a
 * dimension, so two stacks in one account never share a metric or an alarm.
 */
export const SYNC_METRICS = [
  { Name: 'SyncLag', Unit: 'Seconds' },
  { Name: 'SyncChangesApplied', Unit: 'Count' },
  { Name: 'SyncItemsWritten', Unit: 'Count' },
  { Name: 'SyncRowsRefused', Unit: 'Count' },
  { Name: 'SyncSourceErrors', Unit: 'Count' },
  { Name: 'SyncLogRetainedBytes', Unit: 'Bytes' },
] as const;

export type SyncMetricName = (typeof SYNC_METRICS)[number]['Name'];
export type SyncMetricValues = Partial<Record<SyncMetricName, number | undefined>>;

/** The dimension every metric of a stack carries (shared/metrics.ts). */
export { STACK_DIMENSION };

/** One EMF document of the metrics given (the others are left out: a line says what it knows). */
export function syncMetricLine(values: SyncMetricValues, stack?: string): string {
  const metrics = SYNC_METRICS.filter((metric) => values[metric.Name] !== undefined);
  return JSON.stringify({
    _aws: {
      Timestamp: Date.now(),
      CloudWatchMetrics: [
        { Namespace: METRICS_NAMESPACE, Dimensions: [stack === undefined ? [] : [STACK_DIMENSION]], Metrics: metrics },
      ],
    },
    message: 'sync',
    ...(stack !== undefined && { [STACK_DIMENSION]: stack }),
    ...values,
  });
}
