import type { ChangePart, Collection } from './mapping.ts';

/**
 * Rows of the source that break the snapshot's rules (docs/contract.md, sections 7 and 9): each keeps
 * the part of its team it belongs to (or the whole team, for a team row; or its token, which then
 * goes) at its last good state, and is said once in one line naming the table, the id and the field:
 * `projects 1234: name contains a control character`. Said again only once it was fixed and broke
 * again.
 */
export interface Refusal {
  collection: Collection;
  id: string;
  problem: string;
  /** The team whose part it keeps (0: a token's), and that part. */
  teamId: number;
  part: ChangePart;
}

const refusalLine = (r: Refusal) => `${r.collection} ${r.id}: ${r.problem}`;

/** Where a refused row is, as the problem wording of shared/domain/problems.ts names it. */
export const rowWhere = (collection: Collection, id: unknown) => `${collection} ${String(id ?? '?')}`;

/** The refused rows said so far, each once. */
export class RefusalReport {
  private readonly said = new Map<string, Refusal>();
  private readonly say: (line: string) => void;

  constructor(say: (line: string) => void) {
    this.say = say;
  }

  /**
   * The refusals of a read that covered what `covered` says: those said before and no longer refused
   * are forgotten (fixed); new ones are said.
   */
  report(refusals: readonly Refusal[], covered: (earlier: Refusal) => boolean): void {
    const now = new Set(refusals.map(refusalLine));
    for (const [line, earlier] of this.said) if (!now.has(line) && covered(earlier)) this.said.delete(line);
    for (const refusal of refusals) {
      const line = refusalLine(refusal);
      if (!this.said.has(line)) this.say(line);
      this.said.set(line, refusal);
    }
  }

  /** Every row refused now, one line each: what `sync --once` names before it exits 1. */
  lines(): string[] {
    return [...this.said.keys()];
  }
}
