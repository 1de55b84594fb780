import { LIST_RESOURCES } from '../table/keys.ts';
import type { DesiredState } from '../write/desired.ts';
import type { SourceTeam, TeamAsk } from './read/team.ts';
import type { SourceTokens } from './read/tokens.ts';
import type { Refusal } from './refusals.ts';

/**
 * The sync's front end of the writers (docs/contract.md, section 9): what one batch read of the
 * source, in one snapshot of it, as the state the table should take. Apart from batch.ts, which reads
 * and writes, so that what it gives can be tested from a batch built by hand
 * (test/unit/sync-desired-of.test.ts).
 */

/** What a batch read: the teams its changes touched, and the users and tokens they named. */
export interface ReadBatch {
  teams: Map<number, { team: SourceTeam; ask: TeamAsk }>;
  /** The tokens the batch asked for, by Sanctum id. */
  asked: number[];
  /** The teams the table holds already (the others are new to it). */
  held: Set<number>;
  tokens: SourceTokens;
  users: DesiredState['users'];
  removedUsers: number[];
}

/**
 * What the teams read ask of the table. A team left out (refused, or a problem of the plan) is not
 * named, so it is kept as the table holds it; a team the source no longer has is removed; a team new to
 * the table is named only whole. Every part a team was not read for is left out, and kept.
 */
export function desiredOf(read: ReadBatch, leftOut: ReadonlyMap<number, Refusal[]>): DesiredState {
  const desired: DesiredState = {
    teams: [],
    users: [...read.users],
    tokens: read.tokens.tokens,
    removedTeams: [],
    removedUsers: read.removedUsers,
    removedTokens: read.tokens.gone,
  };
  for (const [teamId, { team }] of read.teams) {
    if (leftOut.has(teamId) || team.state === 'refused') continue;
    if (team.state === 'absent') {
      desired.removedTeams!.push(teamId);
      continue;
    }
    // A team the table does not hold yet is written whole or not at all.
    const whole = LIST_RESOURCES.every((list) => team.desired![list]) && team.desired!.finance;
    if (!read.held.has(teamId) && !whole) continue;
    desired.teams.push(team.desired!);
    desired.users.push(...team.users);
  }
  // A user who is a member of several of these teams is named once.
  desired.users = [...new Map(desired.users.map((user) => [user.id, user])).values()];
  return desired;
}
