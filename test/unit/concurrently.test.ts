import { describe, expect, it } from 'vitest';
import { forEachConcurrently } from '../../shared/write/concurrently.ts';

/** The commands' per-item work, 16 items at a time, on work whose every step the test releases by hand. */
function gatedWork(count: number) {
  const started: number[] = [];
  const release: (() => void)[] = [];
  let running = 0;
  const work = async (item: number) => {
    started.push(item);
    running += 1;
    await new Promise<void>((resolve) => (release[item] = resolve));
    running -= 1;
    if (item === 0) throw new Error('the first failure');
    if (item === 1) throw new Error('a later failure');
  };
  const items = Array.from({ length: count }, (_, i) => i);
  return { items, work, started, release, running: () => running };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('forEachConcurrently', () => {
  it('runs every item, never more than 16 at once', async () => {
    let running = 0;
    let most = 0;
    const done: number[] = [];
    await forEachConcurrently(
      Array.from({ length: 50 }, (_, i) => i),
      async (item) => {
        most = Math.max(most, ++running);
        await turn();
        running -= 1;
        done.push(item);
      },
    );
    expect(most).toBe(16);
    expect(done.sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });

  it('starts nothing after a failure, and throws the first failure only once the running work has stopped', async () => {
    const gated = gatedWork(40);
    let settled = false;
    const run = forEachConcurrently(gated.items, gated.work).finally(() => (settled = true));
    await turn();
    expect(gated.started).toEqual(gated.items.slice(0, 16));
    gated.release[0]!();
    await turn();
    expect(gated.started).toHaveLength(16);
    expect(settled).toBe(false);
    for (let item = 1; item < 16; item++) gated.release[item]!();
    await expect(run).rejects.toThrow('the first failure');
    expect(gated.running()).toBe(0);
  });
});
