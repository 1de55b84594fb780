/**
 * A growing list of ids (integers up to 2^53) in fixed-size Float64Array chunks: 8 bytes an id,
 * and no doubling copy as it grows (a 5,000,000-id list never needs 80 MB twice over).
 */
const CHUNK = 65_536;

export class IdList {
  private readonly chunks: Float64Array[] = [];
  private fill = CHUNK;
  length = 0;

  push(id: number): void {
    if (this.fill === CHUNK) {
      this.chunks.push(new Float64Array(CHUNK));
      this.fill = 0;
    }
    this.chunks[this.chunks.length - 1]![this.fill++] = id;
    this.length++;
  }

  *[Symbol.iterator](): Generator<number> {
    for (let c = 0; c < this.chunks.length; c++) {
      const chunk = this.chunks[c]!;
      const end = c === this.chunks.length - 1 ? this.fill : CHUNK;
      for (let i = 0; i < end; i++) yield chunk[i]!;
    }
  }

  /** Copies every id into one array (in insertion order). */
  toArray(): Float64Array {
    const out = new Float64Array(this.length);
    let at = 0;
    for (let c = 0; c < this.chunks.length; c++) {
      const chunk = this.chunks[c]!;
      const end = c === this.chunks.length - 1 ? this.fill : CHUNK;
      out.set(end === CHUNK ? chunk : chunk.subarray(0, end), at);
      at += end;
    }
    return out;
  }
}

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
