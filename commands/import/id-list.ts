/**
 * The ids of a team's projects or daemons, each with its item's hash (shared/write/desired.ts,
 * itemHash), held compactly while pass 1 reads the snapshot: 16 bytes an item in typed arrays that
 * grow by doubling, never the records themselves.
 */
export class IdHashList {
  private ids = new Float64Array(16);
  private hashes = new BigUint64Array(16);
  length = 0;

  push(id: number, hash: bigint): void {
    if (this.length === this.ids.length) {
      const ids = new Float64Array(this.ids.length * 2);
      const hashes = new BigUint64Array(this.hashes.length * 2);
      ids.set(this.ids);
      hashes.set(this.hashes);
      this.ids = ids;
      this.hashes = hashes;
    }
    this.ids[this.length] = id;
    this.hashes[this.length] = hash;
    this.length += 1;
  }

  /** Another list's items appended (a team's daemons gathered from its environments). */
  append(other: IdHashList): void {
    for (let i = 0; i < other.length; i++) this.push(other.ids[i]!, other.hashes[i]!);
  }

  /** The ids in order, each with its hash: what a write compares with the table (WholeList). */
  sorted(): { ids: Float64Array; hashes: BigUint64Array } {
    const order = Uint32Array.from({ length: this.length }, (_, i) => i).sort((a, b) => this.ids[a]! - this.ids[b]!);
    return {
      ids: Float64Array.from(order, (i) => this.ids[i]!),
      hashes: BigUint64Array.from(order, (i) => this.hashes[i]!),
    };
  }
}

/** The 1-based position of `id` in a sorted array (its ordinal), or 0 when it is not there. */
export function ordinalOf(sorted: ArrayLike<number>, id: number): number {
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
