import { describe, expect, it } from 'vitest';
import { desiredOf, type ReadBatch } from '../../shared/sync/desired-of.ts';
import type { SourceTeam } from '../../shared/sync/read/team.ts';
import type { Refusal } from '../../shared/sync/refusals.ts';
import type { DesiredTeam, DesiredToken } from '../../shared/write/desired.ts';
import { byId, financeOf, wholeList } from '../support/desired-states.ts';
import { daemons, projects } from '../support/snapshots.ts';

/**
 * The sync's front end of the writers (shared/sync/desired-of.ts; docs/contract.md, section 9): what
 * one batch read of the source, built here by hand, as the DesiredState the writers plan. A team left
 * out is not named (the table keeps it), a team gone from the source is removed, a team new to the
 * table is named only whole, a part not read is left out, and a user is named once. No table, no
 * database.
 */
const identity = (id: number) => ({ id, slug: `team-${id}`, name: `Team ${id}` });
const user = (id: number) => ({ id, name: `User ${id}` });
const model = (id: number) => ({
  ...identity(id),
  projects: byId(projects(id, 3)),
  daemons: byId(daemons(id, 7, 2)),
  servers: [{ id: 7, monthly_cost: '10.00', currency: 'EUR' }],
  costs: [],
  members: [],
});

/** A team of the source as read/team.ts gives it, with the parts read. */
const present = (id: number, parts: Partial<DesiredTeam>, members: number[] = []): SourceTeam => ({
  state: 'present',
  desired: { identity: identity(id), where: `teams ${id}`, ...parts },
  users: members.map(user),
  refusals: [],
  json: new Map(),
  wholeItems: 0,
});
const gone = (state: 'absent' | 'refused'): SourceTeam => ({
  state,
  users: [],
  refusals: [],
  json: new Map(),
  wholeItems: 0,
});
/** Every part, as a first read of a team has them. */
const whole = (id: number): Partial<DesiredTeam> => ({
  projects: wholeList('projects', model(id).projects),
  daemons: wholeList('daemons', model(id).daemons),
  finance: financeOf(model(id)),
  memberIds: [10],
});
const token = (sanctumId: number, userId: number): DesiredToken => ({
  where: `personal_access_tokens ${sanctumId}`,
  hash: sanctumId.toString(16).padStart(64, '0'),
  userId,
  sanctumId,
  abilities: ['*'],
  expiresAt: null,
});

/** A batch that read these teams, the table holding those in `held`. */
function batch(teams: [number, SourceTeam][], held: number[], extra: Partial<ReadBatch> = {}): ReadBatch {
  return {
    teams: new Map(teams.map(([id, team]) => [id, { team, ask: { parts: new Set() } }])),
    asked: [],
    held: new Set(held),
    tokens: { tokens: [], gone: [], refusals: [] },
    users: [],
    removedUsers: [],
    ...extra,
  };
}
const refusal = (teamId: number): Refusal[] => [
  { collection: 'teams', id: String(teamId), problem: 'slug "x" is used by team 9', teamId, part: 'team' },
];
const none = new Map<number, Refusal[]>();

describe("the sync's DesiredState", () => {
  it('names a team the table holds with only the parts read: the others are kept', () => {
    const finance = financeOf(model(1));
    const state = desiredOf(batch([[1, present(1, { finance })]], [1]), none);
    expect(state.teams).toEqual([{ identity: identity(1), where: 'teams 1', finance }]);
  });

  it('passes a list given by the item on as it is', () => {
    const projects = { edits: [{ id: 5, json: null }] };
    const state = desiredOf(batch([[1, present(1, { projects })]], [1]), none);
    expect(state.teams[0]!.projects).toBe(projects);
  });

  it('removes a team the source no longer has, and does not name it', () => {
    const state = desiredOf(batch([[1, gone('absent')]], [1]), none);
    expect(state.teams).toEqual([]);
    expect(state.removedTeams).toEqual([1]);
  });

  it('neither names nor removes a team whose own row is refused', () => {
    const state = desiredOf(batch([[1, gone('refused')]], [1]), none);
    expect([state.teams, state.removedTeams]).toEqual([[], []]);
  });

  it('does not name a team left out, nor its members, and names the others', () => {
    const read = batch(
      [
        [1, present(1, { memberIds: [10] }, [10])],
        [2, present(2, { memberIds: [11] }, [11])],
      ],
      [1, 2],
    );
    const state = desiredOf(read, new Map([[1, refusal(1)]]));
    expect(state.teams.map((team) => team.identity.id)).toEqual([2]);
    expect(state.users).toEqual([user(11)]);
    expect(state.removedTeams).toEqual([]);
  });

  it('names a team new to the table only whole: one part missing, it is not named at all', () => {
    const { daemons: _missing, ...partly } = whole(2);
    const state = desiredOf(
      batch(
        [
          [1, present(1, whole(1), [10])],
          [2, present(2, partly, [11])],
        ],
        [],
      ),
      none,
    );
    expect(state.teams.map((team) => team.identity.id)).toEqual([1]);
    expect(state.users).toEqual([user(10)]);
  });

  it('names a team the table holds with some parts only, since the others are kept', () => {
    const { daemons: _kept, ...partly } = whole(2);
    const state = desiredOf(batch([[2, present(2, partly)]], [2]), none);
    expect(state.teams.map((team) => team.identity.id)).toEqual([2]);
  });

  it('names a user once, a member of two teams read and changed itself too', () => {
    const read = batch(
      [
        [1, present(1, { memberIds: [10, 11] }, [10, 11])],
        [2, present(2, { memberIds: [10] }, [10])],
      ],
      [1, 2],
      { users: [user(10), user(12)] },
    );
    const state = desiredOf(read, none);
    expect(state.users.map((u) => u.id).sort()).toEqual([10, 11, 12]);
  });

  it('names the tokens read, and removes the tokens and users gone from the source', () => {
    const read = batch([], [], {
      asked: [70, 71],
      tokens: { tokens: [token(70, 10)], gone: [71], refusals: [] },
      removedUsers: [12],
    });
    const state = desiredOf(read, none);
    expect(state).toEqual({
      teams: [],
      users: [],
      tokens: [token(70, 10)],
      removedTeams: [],
      removedUsers: [12],
      removedTokens: [71],
    });
  });
});
