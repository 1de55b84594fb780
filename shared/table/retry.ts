import { clearTimeout, setTimeout } from 'node:timers';

/**
 * A wait that an aborted signal ends at once. Not node:timers/promises: the API's bundles map
 * node:timers to a module of two names (infra/bundling/node-timers.ts), which keeps the promises
 * module out of their cold start.
 */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', stop, { once: true });
  });
}

/**
 * The one retry policy for work DynamoDB accepts but leaves undone: the `UnprocessedKeys` of a
 * BatchGetItem and the `UnprocessedItems` of a BatchWriteItem, its answer when a partition is
 * throttled. (Failed calls are the SDK's own business: it retries them as dynamodb-client.ts and
 * commands/cli/database.ts configure.) The leftovers are sent again after an exponential backoff
 * with jitter, as the BatchWriteItem reference asks ("we strongly recommend that you use an
 * exponential backoff algorithm",
 * https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html), until
 * none are left or the budget is spent; an aborted signal (the request's deadline) stops the wait
 * at once.
 *
 * The budget counts resends in a row that DynamoDB processed nothing of: a batch that goes through
 * a few items at a time, as a throttled partition lets it, is making progress, not failing. The
 * budget is the caller's: a request gives up soon and answers 503 with Retry-After, so a client is
 * not held while DynamoDB sheds load; a writer persists about a minute (WRITER_RETRIES), which is
 * what a list of 100,000 items written at one partition key's 1,000 write units a second needs.
 */
export class LeftUnprocessed extends Error {
  override readonly name = 'LeftUnprocessed';
}

interface RetryBudget {
  /** Resends in a row that may process nothing before the work is given up. */
  retries: number;
  /** The first backoff, doubled at each fruitless resend up to `maxDelayMs` (each drawn from 1 to 2 times that). */
  minDelayMs?: number;
  maxDelayMs?: number;
  signal?: AbortSignal;
}

/**
 * The writers' budget: up to about a minute of fruitless resends, the longest DynamoDB's guide
 * suggests retrying before looking elsewhere for the cause ("set the maximum number of retries to
 * stop around one minute", section "Error retries and exponential backoff" of
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html):
 * 50 ms doubled to 5 s, twelve times, is 31 to 55 s of waiting.
 */
export const WRITER_RETRIES: RetryBudget = { retries: 12, minDelayMs: 50, maxDelayMs: 5_000 };

/**
 * Runs `send` on `work`, then again on whatever it returns as left undone, until nothing is.
 * `send` returns the leftovers of one call (an empty array when all was done).
 */
export async function untilProcessed<T>(
  operation: string,
  work: T[],
  send: (pending: T[]) => Promise<T[]>,
  { retries, minDelayMs = 25, maxDelayMs = 1_000, signal }: RetryBudget,
): Promise<void> {
  let pending = await send(work);
  let fruitless = 0;
  while (pending.length > 0) {
    if (fruitless >= retries)
      throw new LeftUnprocessed(`${operation} left ${pending.length} unprocessed after every retry`);
    const ceiling = Math.min(maxDelayMs, minDelayMs * 2 ** fruitless);
    await sleep(Math.min(maxDelayMs, Math.round(ceiling * (1 + Math.random()))), signal);
    const left = await send(pending);
    fruitless = left.length < pending.length ? 0 : fruitless + 1;
    pending = left;
  }
}
