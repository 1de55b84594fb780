import pRetry from 'p-retry';

/**
 * The one retry policy for work DynamoDB accepts but leaves undone: the `UnprocessedKeys` of a
 * BatchGetItem and the `UnprocessedItems` of a BatchWriteItem, its answer when a partition is
 * throttled. (Failed calls are the SDK's own business: it retries them as dynamodb-client.ts
 * configures.) The leftovers are sent again with p-retry's exponential backoff until none are
 * left or the retries are spent; an aborted signal (the request's deadline) stops the wait at once.
 *
 * The number of retries is the caller's: a request gives up soon and answers 503 with
 * Retry-After, so a client is not held while DynamoDB sheds load; a command persists longer
 * before it reports the failure.
 */
export class LeftUnprocessed extends Error {
  override readonly name = 'LeftUnprocessed';
}

/**
 * Runs `send` on `work`, then again on whatever it returns as left undone, until nothing is.
 * `send` returns the leftovers of one call (an empty array when all was done).
 *
 * The first send goes out before p-retry is called: nearly every call leaves nothing undone, and
 * then none of p-retry's work (its option checks, its clock) is done at all. When something is
 * left, p-retry's first attempt judges that send's leftovers, so every resend follows a backoff.
 */
export async function untilProcessed<T>(
  operation: string,
  work: T[],
  send: (pending: T[]) => Promise<T[]>,
  { retries, signal }: { retries: number; signal?: AbortSignal },
): Promise<void> {
  let pending = await send(work);
  if (pending.length === 0) return;
  await pRetry(
    async function sendPending(attempt) {
      if (attempt > 1) pending = await send(pending);
      if (pending.length > 0)
        throw new LeftUnprocessed(`${operation} left ${pending.length} unprocessed after every retry`);
    },
    // Only leftovers are retried here; an error thrown by a call has had the SDK's retries.
    {
      minTimeout: 25,
      maxTimeout: 1_000,
      randomize: true,
      retries,
      signal,
      shouldRetry: ({ error }) => error instanceof LeftUnprocessed,
    },
  );
}
