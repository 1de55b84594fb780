import pMap, { pMapStop } from 'p-map';

/** Calls to DynamoDB in flight at once for the writers' per-item work. */
const LIMIT = 16;

/**
 * Runs `work` on every item, at most 16 at a time (p-map). After a failure no more work starts,
 * and the first failure is thrown once the work already running has stopped. p-map alone would
 * reject at once and leave writes in flight, and an import that fails releases its lock straight
 * after (commands/import/importer.ts; the sync likewise): a write landing later could interleave with the next import.
 */
export async function forEachConcurrently<T>(items: Iterable<T>, work: (item: T) => Promise<void>): Promise<void> {
  let failure: { error: unknown } | undefined;
  await pMap(
    items,
    async (item) => {
      // p-map then settles once every item started before this one has finished.
      if (failure) return pMapStop;
      try {
        await work(item);
      } catch (error) {
        failure ??= { error };
      }
    },
    { concurrency: LIMIT },
  );
  if (failure) throw failure.error;
}
