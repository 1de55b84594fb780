import pRetry from 'p-retry';

/**
 * The one retry policy for work DynamoDB accepts but leaves undone: the `UnprocessedKeys` of a
 * BatchGetItem and the `UnprocessedItems` of a BatchWriteItem, its answer when a partition is
 * throttled. (Failed calls are the SDK's own business: it retries them as dynamodb-client.ts
 * configures.) The leftovers are sent again with p-retry's exponential backoff until none are
 * left or the budget is spent; an aborted signal (the request's deadline) stops the wait at once.
 *
 * The budget is the caller's: a request gives up after 4 retries and answers 503 with
 * Retry-After, so a client is not held while DynamoDB sheds load; a command persists longer
 * before it reports the failure.
 */
const RETRY_BUDGET = { request: 4, command: 10 } as const;
export type RetryBudget = keyof typeof RETRY_BUDGET;

/** DynamoDB still held back part of a batch when the budget ran out (answered as a 503). */
export class LeftUnprocessed extends Error {
  constructor(count: number, operation: string) {
    super(`${operation} left ${count} request${count === 1 ? '' : 's'} unprocessed after every retry`);
    this.name = 'LeftUnprocessed';
  }
}

/**
 * Runs `send` on `work`, then again on whatever it returns as left undone, until nothing is.
 * `send` returns the leftovers of one call (an empty array when all was done).
 */
export async function untilProcessed<T>(
  operation: string,
  work: T[],
  send: (pending: T[]) => Promise<T[]>,
  options: { budget: RetryBudget; signal?: AbortSignal },
): Promise<void> {
  let pending = work;
  if (pending.length === 0) return;
  await pRetry(
    async function sendPending() {
      pending = await send(pending);
      if (pending.length > 0) throw new LeftUnprocessed(pending.length, operation);
    },
    {
      factor: 2,
      minTimeout: 25,
      maxTimeout: 1_000,
      randomize: true,
      retries: RETRY_BUDGET[options.budget],
      signal: options.signal,
      // Only leftovers are retried here; an error thrown by a call has had the SDK's retries.
      shouldRetry: ({ error }) => error instanceof LeftUnprocessed,
    },
  );
}
