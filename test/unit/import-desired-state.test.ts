import { describe, expect, it } from 'vitest';
import { desiredState } from '../../commands/import/desired-state.ts';
import { hashToken } from '../../shared/api/bearer.ts';
import { servedJson } from '../../shared/domain/served-json.ts';
import type { DesiredState, WholeList } from '../../shared/write/desired.ts';
import { itemHash } from '../../shared/write/desired.ts';
import { listFingerprint } from '../../shared/write/fingerprint.ts';
import { byId, changed, snapshotOf, teamOf, type WorldModel, wholeForm } from '../support/desired-states.ts';
import { daemons, projects } from '../support/snapshots.ts';
import { validateDocument } from '../support/validate.ts';

/**
 * The import's front end of the writers (commands/import/desired-state.ts; docs/contract.md, section
 * 7): a snapshot, validated by pass 1 (commands/import/validation.ts), gives the DesiredState that
 * test/integration/write-cost.test.ts writes in its `whole` form (test/support/desired-states.ts), and
 * what the contract says an import does: every team of the snapshot whole, its members exactly; users
 * and tokens upserted; nothing absent from it named, so nothing removed. No table, no database: the
 * snapshot goes through a temporary file, as pass 1 reads one.
 */
const token = (userId: number, sanctumId: number, extra: Partial<WorldModel['tokens'][number]> = {}) => ({
  sanctumId,
  userId,
  secret: `import-desired-secret-${sanctumId}`,
  name: `token ${sanctumId}`,
  abilities: ['projects:read'],
  expiresAt: null,
  ...extra,
});

const WORLD: WorldModel = {
  teams: [
    {
      id: 1,
      slug: 'acme',
      name: 'Acme',
      projects: byId(projects(1, 5)),
      // Two environments of the team; one daemon runs on the other team's server.
      daemons: byId([...daemons(1, 7, 3), ...daemons(2, 8, 2)]),
      servers: [{ id: 7, monthly_cost: '24.15', currency: 'EUR' }],
      costs: [
        { label: 'Backups', amount: '5.00', currency: 'EUR' },
        { label: 'Backups', amount: '1.50', currency: 'USD' },
      ],
      members: [10, 11],
    },
    {
      id: 2,
      slug: 'empty',
      name: 'Empty',
      projects: new Map(),
      daemons: new Map(),
      servers: [{ id: 8, monthly_cost: '0', currency: 'EUR' }],
      costs: [],
      members: [11],
    },
  ],
  users: [
    { id: 10, name: 'Ada' },
    { id: 11, name: 'Bob' },
    { id: 12, name: 'Cy' }, // a member of no team of the snapshot
  ],
  tokens: [token(10, 70), token(12, 72, { abilities: ['*'], expiresAt: '2027-01-01T00:00:00+00:00' })],
};

/** The import's state for a snapshot document, through pass 1. */
async function imported(document: unknown): Promise<DesiredState> {
  const validation = await validateDocument(document);
  if (!validation.ok) throw new Error(validation.problems.join('\n'));
  return desiredState(validation.snapshot);
}

/** Typed arrays as plain ones, members in order, tokens with the fields a write reads. */
const plain = (state: DesiredState) => ({
  ...state,
  teams: state.teams.map((team) => ({
    ...team,
    projects: team.projects && plainList(team.projects as WholeList),
    daemons: team.daemons && plainList(team.daemons as WholeList),
    memberIds: team.memberIds?.toSorted((a, b) => a - b),
  })),
  tokens: state.tokens.map(({ where, hash, userId, sanctumId, name, abilities, expiresAt }) => ({
    where,
    hash,
    userId,
    sanctumId,
    name,
    abilities,
    expiresAt,
  })),
});
const plainList = (list: WholeList) => ({ ...list, ids: Array.from(list.ids), hashes: Array.from(list.hashes) });

describe("the import's DesiredState", () => {
  it('is the whole form of what the snapshot holds, which the write-cost table writes', async () => {
    expect(plain(await imported(snapshotOf(WORLD)))).toEqual(plain(wholeForm(WORLD).state));
  });

  it('names every team of the snapshot, each with both lists, its finance and its members', async () => {
    const state = await imported(snapshotOf(WORLD));
    expect(state.teams.map((team) => team.identity)).toEqual([
      { id: 1, slug: 'acme', name: 'Acme' },
      { id: 2, slug: 'empty', name: 'Empty' },
    ]);
    for (const team of state.teams) {
      expect(Object.keys(team).sort()).toEqual(['daemons', 'finance', 'identity', 'memberIds', 'projects', 'where']);
    }
    expect(state.teams[0]!.where).toBe('teams[0] (id 1)');
  });

  it('gives a list in id order, each item hashed as served, whatever the order of the file', async () => {
    const document = snapshotOf(WORLD);
    document.projects!.reverse();
    const list = (await imported(document)).teams[0]!.projects as WholeList;
    const rows = projects(1, 5);
    expect(Array.from(list.ids)).toEqual(rows.map((p) => p.id));
    expect(Array.from(list.hashes)).toEqual(rows.map((p) => itemHash(servedJson('projects', p))));
    expect(list.fingerprint).toBe(listFingerprint(rows.map((p) => servedJson('projects', p))));
    expect(list.count).toBe(5);
  });

  it("puts a daemon in its environment's team, whatever team its server belongs to", async () => {
    const state = await imported(snapshotOf(WORLD));
    const ids = Array.from((state.teams[0]!.daemons as WholeList).ids);
    expect(ids).toEqual([...teamOf(WORLD, 1).daemons.keys()]);
    expect(ids).toContain(200_001); // on server 8, the empty team's
    expect((state.teams[1]!.daemons as WholeList).count).toBe(0);
  });

  it('gives a team without projects or daemons empty lists, so that an import empties them', async () => {
    const state = await imported(snapshotOf(WORLD));
    for (const list of ['projects', 'daemons'] as const) {
      expect(plainList(state.teams[1]![list] as WholeList)).toEqual({
        count: 0,
        fingerprint: listFingerprint([]),
        ids: [],
        hashes: [],
      });
    }
  });

  it('gives each team exactly the users that list it as members, each once', async () => {
    const document = snapshotOf(WORLD);
    // Ada lists the team twice: she is one member.
    document.users![0] = { ...(document.users![0] as object), teams: [1, 1] };
    const state = await imported(document);
    expect(state.teams.map((team) => team.memberIds)).toEqual([[10, 11], [11]]);
  });

  it('sums a team its servers and cost lines, per currency', async () => {
    const finance = JSON.parse(`{${(await imported(snapshotOf(WORLD))).teams[0]!.finance!.json}}`);
    expect(finance.totals).toEqual({ EUR: 29.15, USD: 1.5 });
  });

  it('names every user of the snapshot with its name, a member of no team too, and no other', async () => {
    const state = await imported(snapshotOf(WORLD));
    expect(state.users).toEqual([
      { id: 10, name: 'Ada' },
      { id: 11, name: 'Bob' },
      { id: 12, name: 'Cy' },
    ]);
  });

  it('gives each token by the hash of its secret, with its user, Sanctum id, abilities and expiry', async () => {
    const [first, second] = (await imported(snapshotOf(WORLD))).tokens;
    expect(first).toMatchObject({ hash: hashToken('import-desired-secret-70'), userId: 10, sanctumId: 70 });
    expect(first).toMatchObject({ abilities: ['projects:read'], expiresAt: null, where: 'tokens[0]' });
    expect(second).toMatchObject({ userId: 12, abilities: ['*'], expiresAt: '2027-01-01T00:00:00+00:00' });
    expect(JSON.stringify(first)).not.toContain('import-desired-secret');
  });

  it('names nothing to remove: teams, users and tokens absent from the snapshot are left alone', async () => {
    const fewer = changed(WORLD, (world) => {
      world.teams.pop();
      for (const daemon of teamOf(world, 1).daemons.values()) daemon.server_id = 7;
      world.users.pop();
      world.tokens.pop();
    });
    const state = await imported(snapshotOf(fewer));
    expect(state.teams.map((team) => team.identity.id)).toEqual([1]);
    expect(state.users.map((user) => user.id)).toEqual([10, 11]);
    expect([state.removedTeams, state.removedUsers, state.removedTokens]).toEqual([undefined, undefined, undefined]);
  });
});
