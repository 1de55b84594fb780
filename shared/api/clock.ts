/**
 * The functions' clock: milliseconds on Node's monotonic clock (process.hrtime), for a request's
 * start, its `served_in` and access-line Latency, and the age of what a warm function remembers.
 * Not `performance.now()`: the `performance` global loads Node's perf_hooks on its first use, work
 * every cold start would pay for one number.
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * Milliseconds since `startedAt` (a monotonicMs() reading), to 2 decimals: `served_in` and the
 * access line's Latency.
 */
export function elapsedMs(startedAt: number): number {
  return Math.round((monotonicMs() - startedAt) * 100) / 100;
}
