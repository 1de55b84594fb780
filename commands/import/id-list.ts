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

/** The values that occur more than once in a sorted array. */
export function repeatedValues(sorted: Float64Array): number[] {
  const repeated: number[] = [];
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i] === sorted[i - 1] && repeated.at(-1) !== sorted[i]) repeated.push(sorted[i]!);
  }
  return repeated;
}
