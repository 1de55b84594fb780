import type { TeamHead } from './team-reader.ts';

/**
 * What a warm function remembers between requests, only to decide whether to send a page's
 * Query before it knows the request may have it (docs/storage.md, "One round trip on a warm
 * function"). Nothing here ever answers a request: the token and the head are read on every one,
 * and a speculation that turns out wrong costs one Query, never a wrong answer.
 *
 * - Passes: a (token hash, team segment) pair that got its 200 or 304 within FRESH_MS. Only such
 *   a pair speculates, so an unknown token, or a token probing teams it cannot read, never causes
 *   a Query. A pair that fails a check is forgotten at once: a token revoked after it was
 *   remembered costs one wasted Query, on its next request only.
 * - Heads: per team segment, the head last read (team id, generation, counts), the generation to
 *   speculate on and the counts that place the page. Any request that passed updates it.
 *
 * FRESH_MS is 5 minutes: a stale pass costs at most one Query (0.5 RCU) before it is dropped,
 * so the window only has to cover how often real clients come back (a CI job or a dashboard
 * polls within minutes), and 5 minutes is also how long a replaced generation stays readable,
 * so a speculation of a recently passed pair never aims at a generation already swept.
 * Both maps are bounded (least recently used first out): CAPACITY pairs of a 64-character hash
 * and a segment are well under a megabyte.
 */
const FRESH_MS = 5 * 60_000;
const CAPACITY = 4_096;

export class RecentAccess {
  private readonly passes = new Map<string, number>();
  private readonly heads = new Map<string, TeamHead>();

  /** The head to speculate on when this token recently passed for this team, else undefined. */
  speculation(tokenHash: string, teamSegment: string): TeamHead | undefined {
    const seenAt = this.passes.get(pairKey(tokenHash, teamSegment));
    if (seenAt === undefined || performance.now() - seenAt > FRESH_MS) return undefined;
    return this.heads.get(teamSegment);
  }

  /** The pair passed every check, with this head. */
  passed(tokenHash: string, teamSegment: string, head: TeamHead): void {
    touch(this.passes, pairKey(tokenHash, teamSegment), performance.now());
    touch(this.heads, teamSegment, head);
  }

  /** The pair failed a check (401, 403 or 404): it speculates no more. */
  failed(tokenHash: string, teamSegment: string): void {
    this.passes.delete(pairKey(tokenHash, teamSegment));
  }
}

// The hash is always 64 hex characters, so hash + segment names one pair unambiguously.
const pairKey = (tokenHash: string, teamSegment: string) => `${tokenHash}${teamSegment}`;

/** Sets a key as the most recently used (a Map iterates in insertion order) and drops the oldest past capacity. */
function touch<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > CAPACITY) map.delete(map.keys().next().value!);
}
