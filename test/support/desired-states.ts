import { locate } from '../../commands/import/problems.ts';
import { hashToken } from '../../shared/api/bearer.ts';
import { parseAmount } from '../../shared/domain/decimal.ts';
import { type Cost, SERVERS_LABEL } from '../../shared/domain/finance.ts';
import { servedJson } from '../../shared/domain/served-json.ts';
import { LIST_RESOURCES, type ListResource } from '../../shared/table/keys.ts';
import type {
  DesiredState,
  DesiredTeam,
  DesiredToken,
  DesiredUser,
  ItemSource,
  WholeList,
} from '../../shared/write/desired.ts';
import { financePart } from '../../shared/write/finance-part.ts';
import { ListFingerprint } from '../../shared/write/fingerprint.ts';
import { environment, snapshot } from './snapshots.ts';

/**
 * Teams, users and tokens as plain records (the snapshot factories' shapes, test/support/snapshots.ts),
 * and the DesiredState (shared/write/desired.ts) each front end of the writers gives of them: the
 * import's form names every team whole (commands/import/desired-state.ts), the sync's names only what a
 * change touched, its lists by the item (shared/sync/desired-of.ts). What the write-cost table applies
 * (test/integration/write-cost.test.ts), and what the front ends' unit tests compare with.
 */

type Row = Record<string, unknown> & { id: number };

export interface TeamModel {
  id: number;
  slug: string;
  name: string;
  /** By id, as snapshots.ts's `projects` and `daemons` make them (a daemon names its environment). */
  projects: Map<number, Row>;
  daemons: Map<number, Row>;
  /** As snapshots.ts's `server` makes them, and cost lines without their team. */
  servers: { id: number; monthly_cost: string; currency: string }[];
  costs: { label: string; amount: string; currency: string }[];
  members: number[];
}

export interface TokenModel {
  sanctumId: number;
  userId: number;
  secret: string;
  name: string;
  abilities: string[];
  expiresAt: string | null;
}

export interface WorldModel {
  teams: TeamModel[];
  users: { id: number; name: string }[];
  tokens: TokenModel[];
}

/** A state and the JSON of its items, as a write is handed them (ItemSource). */
export interface StateWrite {
  state: DesiredState;
  items: ItemSource;
}

export const byId = <T extends { id: number }>(rows: T[]) => new Map(rows.map((row) => [row.id, row]));

/** A copy of the world changed by `edit`, the world itself untouched. */
export function changed(world: WorldModel, edit: (world: WorldModel) => void): WorldModel {
  const copy = structuredClone(world);
  edit(copy);
  return copy;
}

export const teamOf = (world: WorldModel, id: number) => world.teams.find((team) => team.id === id)!;

/** A list's JSON as served, by id in id order. */
function served(list: ListResource, rows: Map<number, Row>): Map<number, string> {
  const ids = [...rows.keys()].sort((a, b) => a - b);
  return new Map(ids.map((id) => [id, servedJson(list, rows.get(id)!)]));
}

/** A list given whole, as both front ends give one: ids in order, each item's hash, the fingerprint. */
export function wholeList(list: ListResource, rows: Map<number, Row>): WholeList {
  const fingerprint = new ListFingerprint();
  const json = served(list, rows);
  const hashes = [...json.values()].map((text) => fingerprint.add(text));
  return { count: json.size, fingerprint: fingerprint.value(), ids: [...json.keys()], hashes };
}

/** The team's finance part from its servers and cost lines (shared/write/finance-part.ts). */
export function financeOf(team: TeamModel): DesiredTeam['finance'] {
  const units = (amount: string) => {
    const parsed = parseAmount(amount);
    if (!parsed.ok) throw new Error(`${amount}: ${parsed.problem}`);
    return parsed.units;
  };
  const costs: Cost[] = [
    ...team.servers.map((s) => ({ label: SERVERS_LABEL, currency: s.currency, units: units(s.monthly_cost) })),
    ...team.costs.map((c) => ({ label: c.label, currency: c.currency, units: units(c.amount) })),
  ];
  const { json, fingerprint } = financePart(identityOf(team), costs);
  return { json, fingerprint };
}

const identityOf = (team: TeamModel) => ({ id: team.id, slug: team.slug, name: team.name });
const sorted = (ids: number[]) => ids.toSorted((a, b) => a - b);

/** A token as both front ends give it: by the hash of its secret, with its Sanctum id. */
export const desiredToken = (token: TokenModel, where: string): DesiredToken => ({
  where,
  hash: hashToken(token.secret),
  userId: token.userId,
  sanctumId: token.sanctumId,
  name: token.name,
  abilities: token.abilities,
  expiresAt: token.expiresAt,
});

/** The items' JSON a write asks for, from the world it writes. */
export function itemsOf(world: WorldModel): ItemSource {
  return async (needs, emit) => {
    for (const [teamId, lists] of needs) {
      const team = world.teams.find((t) => t.id === teamId);
      for (const [list, asked] of lists) {
        for (const [id, json] of served(list, team?.[list] ?? new Map())) {
          if (asked === 'all' || asked.has(id)) await emit(teamId, list, id, json);
        }
      }
    }
  };
}

/** A team named whole: every part, as a team new to the table must be. */
function wholeTeam(team: TeamModel, where: string): DesiredTeam {
  return {
    identity: identityOf(team),
    where,
    projects: wholeList('projects', team.projects),
    daemons: wholeList('daemons', team.daemons),
    finance: financeOf(team),
    memberIds: sorted(team.members),
  };
}

/**
 * The import's form: every team of the world whole, every user and token upserted, nothing removed
 * (an import leaves alone what its snapshot does not name).
 */
export function wholeForm(world: WorldModel): StateWrite {
  return {
    state: {
      teams: world.teams.map((team, index) => wholeTeam(team, locate('teams', index, team.id))),
      users: world.users.map((user) => ({ id: user.id, name: user.name })),
      tokens: world.tokens.map((token, index) => desiredToken(token, locate('tokens', index))),
    },
    items: itemsOf(world),
  };
}

/** What the sync read although it did not change: rows its log named, parts a full pass read again. */
export interface Touched {
  projects?: number[];
  daemons?: number[];
  finance?: boolean;
  members?: boolean;
}

/**
 * The sync's form of the change from `before` to `after`: each team with only the parts that changed
 * (or were `touched`), its lists by the item; a team new to the table whole; what is gone removed.
 * The users of a team whose members were read are named, as the sync names them (read/team.ts).
 */
export function changesForm(before: WorldModel, after: WorldModel, touched: Touched = {}): StateWrite {
  const state: DesiredState = {
    teams: [],
    users: [],
    tokens: [],
    removedTeams: [],
    removedUsers: [],
    removedTokens: [],
  };
  const usersAfter = byId(after.users);
  const usersBefore = byId(before.users);
  for (const team of after.teams) {
    const where = `teams ${team.id}`;
    const was = before.teams.find((t) => t.id === team.id);
    if (!was) {
      state.teams.push(wholeTeam(team, where));
      state.users.push(...team.members.flatMap((id) => usersAfter.get(id) ?? []));
      continue;
    }
    const desired: DesiredTeam = { identity: identityOf(team), where };
    for (const list of LIST_RESOURCES) {
      const [old, now] = [served(list, was[list]), served(list, team[list])];
      const ids = new Set([...old.keys(), ...now.keys(), ...(touched[list] ?? [])]);
      const edits = sorted([...ids])
        .filter((id) => old.get(id) !== now.get(id) || touched[list]?.includes(id))
        .map((id) => ({ id, json: now.get(id) ?? null }));
      if (edits.length > 0) desired[list] = { edits };
    }
    const finance = financeOf(team)!;
    if (touched.finance || finance.fingerprint !== financeOf(was)!.fingerprint) desired.finance = finance;
    if (touched.members || sorted(team.members).join() !== sorted(was.members).join()) {
      desired.memberIds = sorted(team.members);
      state.users.push(...team.members.flatMap((id) => usersAfter.get(id) ?? []));
    }
    const parts = LIST_RESOURCES.some((list) => desired[list]) || desired.finance || desired.memberIds;
    if (parts || team.slug !== was.slug || team.name !== was.name) state.teams.push(desired);
  }
  state.removedTeams = before.teams.filter((t) => !after.teams.some((a) => a.id === t.id)).map((t) => t.id);
  for (const user of after.users) {
    if (usersBefore.get(user.id)?.name !== user.name) state.users.push(user);
  }
  state.users = [...byId<DesiredUser>(state.users).values()];
  state.removedUsers = before.users.filter((user) => !usersAfter.has(user.id)).map((user) => user.id);
  const tokensBefore = new Map(before.tokens.map((token) => [token.sanctumId, JSON.stringify(token)]));
  state.tokens = after.tokens
    .filter((token) => tokensBefore.get(token.sanctumId) !== JSON.stringify(token))
    .map((token) => desiredToken(token, `personal_access_tokens ${token.sanctumId}`));
  const sanctumIds = new Set(after.tokens.map((token) => token.sanctumId));
  state.removedTokens = before.tokens.filter((token) => !sanctumIds.has(token.sanctumId)).map((t) => t.sanctumId);
  return { state, items: itemsOf(after) };
}

/** The world as a snapshot document (snapshots.ts's shapes): what an import of it reads. */
export function snapshotOf(world: WorldModel) {
  return snapshot({
    teams: world.teams.map(({ id, slug, name }) => ({ id, slug, name })),
    users: world.users.map((user) => ({
      ...user,
      teams: world.teams.filter((team) => team.members.includes(user.id)).map((team) => team.id),
    })),
    tokens: world.tokens.map((t) => ({
      id: t.sanctumId,
      user_id: t.userId,
      token: t.secret,
      name: t.name,
      abilities: t.abilities,
      expires_at: t.expiresAt,
    })),
    environments: world.teams.flatMap((team) =>
      [...new Set([...team.daemons.values()].map((d) => d.environment_id as number))].map((id) =>
        environment(id, team.id),
      ),
    ),
    servers: world.teams.flatMap((team) =>
      team.servers.map((s) => ({ ...s, team_id: team.id, name: `server-${s.id}` })),
    ),
    projects: world.teams.flatMap((team) => [...team.projects.values()]),
    daemons: world.teams.flatMap((team) => [...team.daemons.values()]),
    costs: world.teams.flatMap((team) => team.costs.map((cost) => ({ team_id: team.id, ...cost }))),
  });
}
