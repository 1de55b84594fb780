import type { DesiredTeam } from './desired.ts';
import type { TeamPlan } from './plan.ts';

/**
 * The order a write's teams switch in (docs/contract.md, sections 7 and 9). A slug names one team at a
 * time: a team may take a slug that another team of the same write gives up, and must switch after it;
 * teams that hand each other slugs in a cycle (two swapping) cannot be ordered, and switch together in
 * one transaction where the write follows a source (the sync), or are refused (the import: rename in two
 * imports). Rights taken away before rights granted: of the teams free to switch, those whose members
 * only leave go first, those whose members only join last, so a user moved from one team to another
 * never reads both.
 */

export type SlugProblem =
  | { kind: 'slugTaken'; team: DesiredTeam; holder: number }
  | { kind: 'slugCycle'; team: DesiredTeam; holder: DesiredTeam };

/** Teams switched together in one transaction at most (each adds up to 9 actions of its 100). */
const TEAMS_SWITCHED_TOGETHER = 8;

/** The units teams switch in, in order; problems for slugs that cannot be had. */
export function orderUnits(
  teams: TeamPlan[],
  removedIds: ReadonlySet<number>,
  slugHolders: ReadonlyMap<string, number>,
  problems: SlugProblem[] | unknown[],
  cycles: 'refuse' | 'together',
): TeamPlan[][] {
  const desiredIds = new Set(teams.map((team) => team.desired.identity.id));
  for (const team of teams) {
    const { slug, id } = team.desired.identity;
    const holder = slug === undefined ? undefined : slugHolders.get(slug);
    // A slug held by a team outside the write that keeps it: no order frees it.
    if (holder !== undefined && holder !== id && !removedIds.has(holder) && !desiredIds.has(holder)) {
      (problems as SlugProblem[]).push({ kind: 'slugTaken', team: team.desired, holder });
    }
  }
  const holderOf = (team: TeamPlan, among: TeamPlan[]) =>
    team.desired.identity.slug === undefined
      ? undefined
      : among.find(
          (other) =>
            other !== team &&
            other.stored?.identity.slug === team.desired.identity.slug &&
            other.desired.identity.slug !== team.desired.identity.slug,
        );
  const units: TeamPlan[][] = [];
  let remaining = [...teams];
  while (remaining.length > 0) {
    const ready = remaining.filter((team) => !holderOf(team, remaining));
    if (ready.length === 0) {
      // The teams left hold each other's slugs: each group of them, tied by the slugs they hand on,
      // switches in one transaction (five pairs swapping are five groups).
      const groups = cycles === 'together' ? slugGroups(remaining, holderOf) : [remaining];
      const together = groups.filter((group) => cycles === 'together' && group.length <= TEAMS_SWITCHED_TOGETHER);
      for (const team of groups.filter((group) => !together.includes(group)).flat()) {
        (problems as SlugProblem[]).push({
          kind: 'slugCycle',
          team: team.desired,
          holder: holderOf(team, remaining)!.desired,
        });
      }
      return [...units, ...together];
    }
    units.push(...ready.sort((a, b) => membersOrder(a) - membersOrder(b)).map((team) => [team]));
    remaining = remaining.filter((team) => !ready.includes(team));
  }
  return units;
}

/** Teams split into the groups that the slugs they take from each other tie together. */
function slugGroups(teams: TeamPlan[], holderOf: (team: TeamPlan, among: TeamPlan[]) => TeamPlan | undefined) {
  const groupOf = new Map(teams.map((team) => [team, [team]]));
  for (const team of teams) {
    const holder = holderOf(team, teams);
    const [a, b] = [groupOf.get(team)!, holder && groupOf.get(holder)!];
    if (!b || a === b) continue;
    a.push(...b);
    for (const member of b) groupOf.set(member, a);
  }
  return [...new Set(groupOf.values())];
}

/** Leaving only, then neither, then both, then joining only. */
function membersOrder(team: TeamPlan): number {
  const leaving = team.leaving.length > 0;
  const joining = team.joining.length > 0;
  return leaving && !joining ? 0 : !leaving && !joining ? 1 : leaving ? 2 : 3;
}
