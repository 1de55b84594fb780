import { describe, expect, it } from 'vitest';
import { SyncMeter, type SyncMetricValues } from '../../shared/sync/metrics.ts';

/** When the running sync says what (shared/sync/metrics.ts), on a clock the test moves. */
describe("the sync's metric lines", () => {
  const meterAt = () => {
    const clock = { now: 1_000_000 };
    const lines: SyncMetricValues[] = [];
    const meter = new SyncMeter(
      (values) => lines.push(values),
      () => clock.now,
    );
    return { clock, lines, meter };
  };
  const retained = () => Promise.resolve(4096);

  it('says the log held back once a minute while busy, on a line of its own, and not again within the minute', async () => {
    const { clock, lines, meter } = meterAt();
    await meter.tick(false, retained);
    expect(lines).toEqual([{ SyncLogRetainedBytes: 4096, SyncItemsWritten: 0, SyncSourceErrors: 0 }]);
    meter.batch({ lagSeconds: 0.2, changes: 3, refused: 0 });
    clock.now += 59_000;
    await meter.tick(false, retained);
    expect(lines).toHaveLength(2);
    clock.now += 1_000;
    await meter.tick(false, retained);
    expect(lines.at(-1)).toEqual({ SyncLogRetainedBytes: 4096, SyncItemsWritten: 0, SyncSourceErrors: 0 });
  });

  it('says an idle minute once, with the log held back, and counts the items written since the last line', async () => {
    const { clock, lines, meter } = meterAt();
    meter.written = 7;
    await meter.tick(true, retained);
    expect(lines).toEqual([
      {
        SyncLag: 0,
        SyncChangesApplied: 0,
        SyncRowsRefused: 0,
        SyncLogRetainedBytes: 4096,
        SyncItemsWritten: 7,
        SyncSourceErrors: 0,
      },
    ]);
    clock.now += 30_000;
    await meter.tick(true, retained);
    expect(lines).toHaveLength(1);
  });

  it('says an outage at its first failure, even just after another line, then at most once a minute', async () => {
    const { clock, lines, meter } = meterAt();
    await meter.tick(true, retained);
    clock.now += 1_000;
    meter.sourceFailed();
    expect(lines.at(-1)).toEqual({ SyncItemsWritten: 0, SyncSourceErrors: 1 });
    clock.now += 59_000;
    meter.sourceFailed();
    expect(lines).toHaveLength(2);
    clock.now += 1_000;
    meter.sourceFailed();
    expect(lines).toHaveLength(3);
  });

  it('leaves the log held back out when the source cannot say it', async () => {
    const { lines, meter } = meterAt();
    await meter.tick(true, () => Promise.reject(new Error('gone')));
    expect(lines[0]!.SyncLogRetainedBytes).toBeUndefined();
  });
});
