/** The 1-based position of `id` in a sorted array (its ordinal), or 0 when it is not there. */
export function ordinalOf(sorted: Float64Array, id: number): number {
  let low = 0;
  let high = sorted.length - 1;
  while (low <= high) {
    const mid = (low + high) >>> 1;
    const value = sorted[mid]!;
    if (value < id) low = mid + 1;
    else if (value > id) high = mid - 1;
    else return mid + 1;
  }
  return 0;
}

/** The ids that occur more than once across the lists. */
export function repeatedIds(lists: Float64Array[]): Set<number> {
  const all = new Float64Array(lists.reduce((n, list) => n + list.length, 0));
  let at = 0;
  for (const list of lists) {
    all.set(list, at);
    at += list.length;
  }
  all.sort();
  return new Set(all.filter((id, i) => i > 0 && id === all[i - 1]));
}
