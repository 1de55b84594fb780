import { Duration, Stack } from 'aws-cdk-lib';
import {
  Alarm,
  type AlarmProps,
  ComparisonOperator,
  GraphWidget,
  type IMetric,
  Stats,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import type { SyncMetricName } from '../shared/sync/metrics.ts';
import { stackMetric } from './api-metrics.ts';
import type { TableSync } from './sync.ts';

/**
 * A metric the sync writes in its log lines (shared/sync/metrics.ts, SYNC_METRICS; shared/sync/deployed.ts
 * publishes them with Powertools' Metrics), by the minute unless said.
 */
const syncMetric = (sync: TableSync, name: SyncMetricName, statistic: string, period = Duration.minutes(1)) =>
  stackMetric(Stack.of(sync), name, {}, statistic, period);

/**
 * How much log the source may hold back for the sync before it pages: 5 GiB. On PostgreSQL this is
 * the WAL the sync's replication slot retains, which fills the database's storage if the slot is
 * never read again; on MySQL the binlog written since the sync's position, which the binlog
 * retention purges anyway. A sync that keeps up holds back what a minute or two of writes make
 * (megabytes); 5 GiB is hours behind for most Laravel databases, or a slot nobody reads (the sync
 * stopped, or replaced elsewhere), and well before what a DBA would cap it at on a database of tens
 * of GiB. Raise it with the cap (docs/operations.md).
 */
export const LOG_RETAINED_ALARM_BYTES = 5 * 1024 ** 3;

/**
 * The sync's alarms, each saying where to look: behind the source for minutes, a source that keeps
 * failing, too much log held back in the source, no sync at all, and a function that failed.
 */
export function syncAlarms(sync: TableSync): Alarm[] {
  // At or above the threshold, and no data is no alarm, unless said otherwise.
  const alarm = (id: string, props: AlarmProps) =>
    new Alarm(sync, id, {
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      ...props,
    });
  return [
    alarm('LagAlarm', {
      metric: syncMetric(sync, 'SyncLag', Stats.MAXIMUM),
      threshold: 60,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      datapointsToAlarm: 3,
      alarmDescription:
        'The sync stayed more than a minute behind the source for 3 minutes: see the sync log group ' +
        '(DynamoDB retries, a long full pass, an import holding the lock) and changes applied on the dashboard.',
    }),
    alarm('SourceErrorsAlarm', {
      metric: syncMetric(sync, 'SyncSourceErrors', Stats.SUM),
      threshold: 1,
      evaluationPeriods: 5,
      datapointsToAlarm: 3,
      alarmDescription:
        'The sync could not use the source in 3 of 5 minutes: see the ERROR lines of the sync log group ' +
        '(credentials refused, source not answering, not prepared, secret unreadable).',
    }),
    // Reported once a minute, busy or idle (shared/sync/metrics.ts): missing data is no sync running,
    // which the other alarms watch.
    alarm('LogRetainedAlarm', {
      metric: syncMetric(sync, 'SyncLogRetainedBytes', Stats.MAXIMUM, Duration.minutes(5)),
      threshold: LOG_RETAINED_ALARM_BYTES,
      evaluationPeriods: 3,
      datapointsToAlarm: 3,
      alarmDescription:
        'The source has held back 5 GiB or more of log for the sync for 15 minutes (PostgreSQL: WAL its ' +
        'replication slot retains, which fills the database storage; MySQL: binlog not yet read): see the ' +
        'sync log group and SyncLag on the dashboard. The DBA caps it with max_slot_wal_keep_size on ' +
        "PostgreSQL (the RDS parameter group) or the binlog retention (RDS: mysql.rds_set_configuration('binlog " +
        "retention hours', n)); past the cap the sync takes a new position and reconciles with a full pass.",
    }),
    // Every line the sync writes carries SyncSourceErrors (0 or 1): none at all is no sync.
    alarm('NotRunningAlarm', {
      metric: syncMetric(sync, 'SyncSourceErrors', Stats.SAMPLE_COUNT, Duration.minutes(5)),
      threshold: 1,
      comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
      evaluationPeriods: 2,
      datapointsToAlarm: 2,
      treatMissingData: TreatMissingData.BREACHING,
      alarmDescription:
        'No sync metric for 10 minutes, so the sync is not running: see the sync log group (a sync run elsewhere ' +
        'holds the lease, the function fails to start or reach DynamoDB) and whether the schedule is enabled.',
    }),
    alarm('ErrorsAlarm', {
      metric: sync.function.metricErrors({ period: Duration.minutes(5) }),
      threshold: 1,
      evaluationPeriods: 1,
      datapointsToAlarm: 1,
      alarmDescription:
        'The sync function failed (a crash, a timeout, DynamoDB unreachable), which the next minute retries: ' +
        'see the ERROR lines of the sync log group.',
    }),
  ];
}

/**
 * The dashboard's rows for the sync: how far behind, how much log the source holds back for it
 * (with the alarm's line), what it applied and wrote, what it refused; then its function.
 */
export function syncWidgets(sync: TableSync): GraphWidget[][] {
  const graph = (title: string, left: IMetric[]) => new GraphWidget({ title, left });
  const retained = new GraphWidget({
    title: 'Sync log held back in the source (bytes, maximum a minute)',
    left: [syncMetric(sync, 'SyncLogRetainedBytes', Stats.MAXIMUM)],
    leftAnnotations: [{ value: LOG_RETAINED_ALARM_BYTES, label: 'alarm (5 GiB)' }],
  });
  return [
    [
      graph('Sync lag (s, maximum a minute)', [syncMetric(sync, 'SyncLag', Stats.MAXIMUM)]),
      retained,
      graph('Sync changes applied and items written (a minute)', [
        syncMetric(sync, 'SyncChangesApplied', Stats.SUM),
        syncMetric(sync, 'SyncItemsWritten', Stats.SUM),
      ]),
      graph('Sync rows refused and source errors (a minute)', [
        syncMetric(sync, 'SyncRowsRefused', Stats.SUM),
        syncMetric(sync, 'SyncSourceErrors', Stats.SUM),
      ]),
    ],
    [
      graph('Sync function: errors, throttles, concurrent executions', [
        sync.function.metricErrors(),
        sync.function.metricThrottles(),
        sync.function.metric('ConcurrentExecutions', { statistic: Stats.MAXIMUM }),
      ]),
    ],
  ];
}
