import { describe, expect, it } from 'vitest';
import { Deadline } from '../../shared/deadline.ts';
import { toContractError } from '../../shared/http/errors.ts';

/** A request's deadline (shared/deadline.ts): a signal only for a call that could outlive it. */
describe('a request deadline', () => {
  it('gives no signal to a call that ends before the deadline by its own timeouts', () => {
    const deadline = new Deadline(9_500);
    expect(deadline.signalFor(5_000)).toBeUndefined();
    deadline.stop();
  });

  it('gives a signal to a call that could outlive it, and to a call of unknown length', () => {
    const deadline = new Deadline(4_000);
    const signal = deadline.signalFor(5_000);
    expect(signal).toBeInstanceOf(AbortSignal);
    expect(signal!.aborted).toBe(false);
    expect(deadline.signalFor(undefined)).toBe(signal);
    deadline.stop();
  });

  it('aborts its signal at the deadline with a TimeoutError, which answers 503', async () => {
    const deadline = new Deadline(20);
    const signal = deadline.signal();
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    expect((signal.reason as DOMException).name).toBe('TimeoutError');
    expect(toContractError(signal.reason).statusCode).toBe(503);
  });

  it('gives an aborted signal once the deadline has passed', () => {
    const deadline = new Deadline(-1);
    expect(deadline.signalFor(1)?.aborted).toBe(true);
  });

  it('never aborts once stopped (the request ended)', async () => {
    const deadline = new Deadline(20);
    const signal = deadline.signal();
    deadline.stop();
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(signal.aborted).toBe(false);
  });
});
