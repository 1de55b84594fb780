import { METRICS_NAMESPACE, STACK_DIMENSION } from '../metrics.ts';

/**
 * What the sync reports to CloudWatch (docs/operations.md), one embedded metric format document a
 * line, which CloudWatch Logs turns into metrics as the line arrives
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html:
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

/** A minute: how often an idle sync says so, and how often the log held back for it is said. */
const EVERY_MS = 60_000;

/**
 * What a running sync reports, and when: one set of values per batch that applied something; one a
 * minute while idle (the lag is then nothing); the log the source holds back for it once a minute,
 * busy or idle; while the source does not answer, SyncSourceErrors at 1, at most once a minute.
 */
export class SyncMeter {
  /** Items written since the last report (counted at the DynamoDB client: run.ts). */
  written = 0;
  sourceDown = false;
  private last = 0;
  private lastHeldBack = 0;
  private lastDown = -EVERY_MS;
  private readonly report: (values: SyncMetricValues) => void;
  private readonly clock: () => number;

  constructor(report: (values: SyncMetricValues) => void, clock: () => number) {
    this.report = report;
    this.clock = clock;
  }

  batch(done: { lagSeconds: number; changes: number; refused: number }): void {
    this.emit({ SyncLag: done.lagSeconds, SyncChangesApplied: done.changes, SyncRowsRefused: done.refused });
  }

  /** After each turn of the run: the idle line and the log held back, each when its minute has come. */
  async tick(idle: boolean, retainedBytes: () => Promise<number> | undefined): Promise<void> {
    const now = this.clock();
    const idleDue = idle && now - this.last >= EVERY_MS;
    const heldBackDue = now - this.lastHeldBack >= EVERY_MS;
    if (!idleDue && !heldBackDue) return;
    const values: SyncMetricValues = idleDue ? { SyncLag: 0, SyncChangesApplied: 0, SyncRowsRefused: 0 } : {};
    if (heldBackDue) {
      this.lastHeldBack = now;
      values.SyncLogRetainedBytes = await retainedBytes()?.catch(() => undefined);
    }
    this.emit(values);
  }

  /** An outage is said at its first failure, whatever line came just before, then once a minute. */
  sourceFailed(): void {
    this.sourceDown = true;
    if (this.clock() - this.lastDown < EVERY_MS) return;
    this.lastDown = this.clock();
    this.emit({});
  }

  private emit(values: SyncMetricValues): void {
    this.last = this.clock();
    const written = this.written;
    this.written = 0;
    this.report({ ...values, SyncItemsWritten: written, SyncSourceErrors: this.sourceDown ? 1 : 0 });
  }
}
