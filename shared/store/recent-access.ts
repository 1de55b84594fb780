import { monotonicMs } from '../clock.ts';
import type { TeamHead } from './team-reader.ts';

/**
 * What a warm function remembers between requests, only to decide whether to send a page's
 * Query before it knows the request may have it (docs/storage.md, "One round trip on a warm
 * function"). Nothing here ever answers a request: the token and the head are read on every one,
 * and a speculation that turns out wrong costs one Query, never a wrong answer.
 *
 * A (token hash, team segment) pair that got its 200 or 304 within FRESH_MS speculates, on the
 * head it last read; an unknown token, or a token probing teams it cannot read, never causes a
 * Query, and a pair that fails a check is forgotten at once. FRESH_MS is also how long a replaced
 * generation stays readable, so a speculation never aims at one already swept. The map is
 * bounded, least recently used first out.
 */
const FRESH_MS = 5 * 60_000;
const CAPACITY = 4_096;

export class RecentAccess {
  private readonly passes = new Map<string, { head: TeamHead; at: number }>();

  /** The head to speculate on when this token recently passed for this team, else undefined. */
  speculation(tokenHash: string, teamSegment: string): TeamHead | undefined {
    const pass = this.passes.get(tokenHash + teamSegment);
    return pass && monotonicMs() - pass.at <= FRESH_MS ? pass.head : undefined;
  }

  /** The pair passed every check, with this head. */
  passed(tokenHash: string, teamSegment: string, head: TeamHead): void {
    // A hash is always 64 hex characters, so hash + segment names one pair.
    const key = tokenHash + teamSegment;
    this.passes.delete(key);
    this.passes.set(key, { head, at: monotonicMs() });
    if (this.passes.size > CAPACITY) this.passes.delete(this.passes.keys().next().value!);
  }

  /** The pair failed a check (401, 403 or 404): it speculates no more. */
  failed(tokenHash: string, teamSegment: string): void {
    this.passes.delete(tokenHash + teamSegment);
  }
}
