import { hash } from 'node:crypto';

/**
 * Fingerprints of a team's parts, kept on its head, so that a writer knows whether a part would
 * change without reading the part's items back (docs/storage.md, "Keeping up with a source
 * database"). Each is a SHA-256 (base64url), of content exactly as it is served.
 *
 * A list's fingerprint must not depend on the order its items are met: an import reads a snapshot
 * in file order (and meets a team's daemons by their environments, before it knows their team),
 * while a sync reads the source in id order. So a list is fingerprinted as a multiset: the sum,
 * modulo 2^256, of the SHA-256 of each item's JSON (every item has its own id, so no item occurs
 * twice). Two different lists share a sum only by a collision that has to be searched for, with
 * tens of thousands of crafted items in one team; and all such a collision could do is keep that
 * team's own list from updating until its next change.
 */
export class ListFingerprint {
  /** The sum, as eight 32-bit words, most significant first. */
  private readonly words = new Uint32Array(8);

  /** An empty sum, or one a fingerprint gave (value()): items can then be added to it and taken from it. */
  constructor(value?: string) {
    if (value) this.addWords(Buffer.from(value, 'base64url'));
  }

  /** Adds one item's JSON; returns the item's hash (the first 8 bytes of its digest: itemHash). */
  add(json: string): bigint {
    const digest = hash('sha256', json, 'buffer');
    this.addWords(digest);
    return digest.readBigUInt64BE(0);
  }

  /** Takes one item's JSON away (an item that left the list): adds its two's complement. */
  remove(json: string): void {
    const digest = hash('sha256', json, 'buffer');
    for (let i = 0; i < digest.length; i++) digest[i] = ~digest[i]! & 0xff;
    this.addWords(digest);
    const one = Buffer.alloc(32);
    one[31] = 1;
    this.addWords(one);
  }

  /** Adds another sum (a team's daemons are summed by environment first). */
  merge(other: ListFingerprint): void {
    this.addWords(Buffer.from(other.words.buffer.slice(0)).swap32());
  }

  /** The fingerprint: the sum, base64url. */
  value(): string {
    return Buffer.from(this.words.buffer.slice(0)).swap32().toString('base64url');
  }

  /** `digest`: 32 bytes, big-endian. */
  private addWords(digest: Buffer): void {
    let carry = 0;
    for (let i = 7; i >= 0; i--) {
      const sum = this.words[i]! + digest.readUInt32BE(i * 4) + carry;
      this.words[i] = sum; // the low 32 bits
      carry = sum > 0xffffffff ? 1 : 0;
    }
  }
}

/** The fingerprint of a list given whole. */
export function listFingerprint(jsons: Iterable<string>): string {
  const sum = new ListFingerprint();
  for (const json of jsons) sum.add(json);
  return sum.value();
}

/** The fingerprint of content served as one text (the finance summary). */
export const textFingerprint = (text: string): string => hash('sha256', text, 'base64url');

/** The fingerprint of a team's members: its user ids, sorted. */
export const membersFingerprint = (userIds: readonly number[]): string =>
  textFingerprint(userIds.toSorted((a, b) => a - b).join(','));
