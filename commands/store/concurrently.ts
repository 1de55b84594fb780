/** Calls to DynamoDB in flight at once for the commands' per-item work. */
const LIMIT = 16;

/** Runs `work` on every item, at most 16 at a time; the first failure is thrown once all have stopped. */
export async function forEachConcurrently<T>(items: Iterable<T>, work: (item: T) => Promise<void>): Promise<void> {
  const iterator = items[Symbol.iterator]();
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    for (let next = iterator.next(); !next.done && !failure; next = iterator.next()) {
      try {
        await work(next.value);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: LIMIT }, worker));
  if (failure) throw failure.error;
}
