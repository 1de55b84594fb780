import { afterAll, describe, expect, it } from 'vitest';
import {
  byId,
  changed,
  changesForm,
  type StateWrite,
  type TeamModel,
  type TokenModel,
  type Touched,
  teamOf,
  type WorldModel,
  wholeForm,
} from '../support/desired-states.ts';
import { desiredWriter, type Form } from '../support/desired-writes.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { ListModel, spacedProjects, teamOfKey } from '../support/list-changes.ts';
import { daemons } from '../support/snapshots.ts';
import { tableApi } from '../support/table-api.ts';
import type { WrittenKind } from '../support/writes.ts';

/**
 * "It writes only what changed" (docs/contract.md, section 7), "Writes follow the change, not the
 * data" and "At any size" (section 9), as one table: each row is a kind of change, a DesiredState
 * before it and after it (shared/write/desired.ts), the most items it may write, and what it must not
 * write at all. Both front ends give the writers one DesiredState, and this is where its cost is
 * pinned; that each front end gives the right one is pinned apart, without a table
 * (test/unit/import-desired-state.test.ts, test/unit/sync-desired-of.test.ts).
 *
 * Each form has a table of its own, written through the writers' one path under the lease and the
 * locks (test/support/desired-writes.ts): `whole`, the import's form (every team whole, its lists as
 * `WholeList`); `changes`, the sync's (only the parts a change touched, its lists as `ListChanges`;
 * removals are the sync's alone). Its rows run on it one after another: the first writes its `before`
 * and loads the big team, counted; each row after it starts from the `before` of the row before it
 * (the big team as loaded), that row's writes undone item by item, uncounted, so the table is as it
 * was to the byte, with nothing left for a sweep. Then `after` is written, counted at the writer's
 * client: the team's lock, its items, the ledger, and the sweep of what the change replaced once
 * retention is over; the command's lease is not (it is taken once a run). The items' JSON goes
 * through the ItemSource. A team of 2,000 projects and 300 daemons beside a bystander team, of which
 * no row may write anything; and after it, the API serves `after`.
 */
const BIG = { id: 1, slug: 'big' };
const BYSTANDER = { id: 2, slug: 'bystander' };
const SLUGS = new Map([BIG, BYSTANDER].map((team) => [team.slug, team.id]));
const PROJECTS = 2_000;
const secretOf = (sanctumId: number) => `write-cost-secret-${sanctumId}`;

const big = {
  ...BIG,
  name: 'Big',
  projects: byId(spacedProjects(BIG.id, PROJECTS)),
  daemons: byId([1, 2, 3].flatMap((environment) => daemons(environment, 7, 100))),
  servers: [
    { id: 7, monthly_cost: '24.15', currency: 'EUR' },
    { id: 8, monthly_cost: '12.00', currency: 'EUR' },
  ],
  costs: [
    { label: 'Backups', amount: '5.00', currency: 'EUR' },
    { label: 'Load balancers', amount: '12.00', currency: 'EUR' },
  ],
  members: [10, 11, 12],
};
const bystander = {
  ...BYSTANDER,
  name: 'Bystander',
  projects: byId(spacedProjects(BYSTANDER.id, 3)),
  daemons: byId(daemons(4, 9, 2)),
  servers: [{ id: 9, monthly_cost: '5.00', currency: 'EUR' }],
  costs: [{ label: 'Backups', amount: '1.00', currency: 'EUR' }],
  members: [10, 11],
};
const token = (userId: number, sanctumId = 60 + userId) => ({
  sanctumId,
  userId,
  secret: secretOf(sanctumId),
  name: `token of ${userId}`,
  abilities: ['*'],
  expiresAt: null,
});
const BYSTANDER_ALONE: WorldModel = {
  teams: [bystander],
  users: [10, 11, 12, 13].map((id) => ({ id, name: `User ${id}` })),
  tokens: [10, 11, 12, 13].map((id) => token(id)),
};
const BASE = changed(BYSTANDER_ALONE, (world) => world.teams.unshift(big));

/** The id in the middle of the big team's projects (ids are even: the odd one after it is free). */
const middle = (world: WorldModel) => {
  const ids = [...teamOf(world, BIG.id).projects.keys()].sort((a, b) => a - b);
  return ids[Math.floor(ids.length / 2)]!;
};
const lastProject = (world: WorldModel) => Math.max(...teamOf(world, BIG.id).projects.keys());
const project = (id: number) => ({ ...spacedProjects(BIG.id, 1)[0]!, id, name: `Added ${id}`, slug: `added-${id}` });
const onBig = (edit: (team: WorldModel['teams'][number], world: WorldModel) => void) => (world: WorldModel) => [
  changed(world, (next) => edit(teamOf(next, BIG.id), next)),
];

interface Change {
  kind: string;
  forms: Form[];
  /** The world before the change (BASE unless said), and those it goes through, one write each. */
  from?: WorldModel;
  to: (from: WorldModel) => WorldModel[];
  /** What the sync reads again although it did not change (its form only). */
  touched?: Touched;
  atMost: number;
  /** Kinds of item written exactly this many times. */
  writes?: Partial<Record<WrittenKind, number>>;
  never?: WrittenKind[];
}

const NO_RESOURCE: WrittenKind[] = ['project', 'daemon', 'finance', 'head'];
const NO_TEAM: WrittenKind[] = [...NO_RESOURCE, 'member', 'team', 'team list', 'lock', 'ledger'];
const BOTH: Form[] = ['whole', 'changes'];

const CHANGES: Change[] = [
  {
    kind: 'the first load',
    forms: BOTH,
    from: BYSTANDER_ALONE,
    to: () => [BASE],
    atMost: 2_400,
    writes: { project: PROJECTS, daemon: 300 },
  },
  {
    kind: 'nothing changed',
    forms: BOTH,
    to: (world) => [world],
    // The sync's no-op: rows of both lists, the finances and the members read again, all as they are.
    touched: { projects: [1_000_002, 1_002_000], daemons: [200_050], finance: true, members: true },
    atMost: 0,
  },
  {
    kind: 'a cost line',
    forms: BOTH,
    to: onBig((team) => (team.costs[0]!.amount = '6.00')),
    atMost: 10,
    writes: { finance: 2 }, // the summary by id and by slug
    never: ['project', 'daemon', 'head', 'member', 'token', 'user'],
  },
  {
    kind: "a server's cost",
    forms: BOTH,
    to: onBig((team) => (team.servers[0]!.monthly_cost = '30.00')),
    atMost: 10,
    writes: { finance: 2 },
    never: ['project', 'daemon', 'head', 'member', 'token', 'user'],
  },
  {
    kind: 'one daemon changed',
    forms: BOTH,
    to: onBig((team) => (team.daemons.get(200_050)!.processes = 9)),
    atMost: 10,
    // Its new version, the sweep of the old one, and the list's head by id and by slug.
    writes: { daemon: 2, head: 2 },
    never: ['project', 'finance', 'member', 'token', 'user'],
  },
  {
    kind: 'one daemon fewer',
    forms: BOTH,
    to: onBig((team) => team.daemons.delete(200_050)),
    atMost: 50,
    writes: { daemon: 1, head: 2 }, // the sweep of the one gone; the head says its slot is gone
    never: ['project', 'finance', 'member', 'token', 'user'],
  },
  {
    kind: 'one project renamed',
    forms: BOTH,
    to: (world) => onBig((team) => (team.projects.get(middle(world))!.name = 'Renamed'))(world),
    atMost: 10,
    writes: { project: 2, head: 2 },
    never: ['daemon', 'finance', 'member', 'token', 'user'],
  },
  {
    kind: 'one project added after the last',
    forms: BOTH,
    to: (world) => onBig((team) => team.projects.set(lastProject(world) + 2, project(lastProject(world) + 2)))(world),
    atMost: 10,
    never: ['daemon', 'finance', 'member', 'token', 'user'],
  },
  {
    kind: 'one project removed from the middle',
    forms: BOTH,
    to: (world) => onBig((team) => team.projects.delete(middle(world)))(world),
    atMost: 50,
    never: ['daemon', 'finance', 'member', 'token', 'user'],
  },
  {
    kind: 'one project added in the middle',
    forms: BOTH,
    to: (world) => onBig((team) => team.projects.set(middle(world) + 1, project(middle(world) + 1)))(world),
    atMost: 50,
    never: ['daemon', 'finance', 'member', 'token', 'user'],
  },
  {
    kind: '20 removed from the middle, one by one',
    forms: BOTH,
    to: (world) => {
      const worlds = [world];
      for (let i = 0; i < 20; i++)
        worlds.push(onBig((team) => team.projects.delete(middle(worlds[i]!)))(worlds[i]!)[0]!);
      return worlds.slice(1);
    },
    atMost: 1_000,
    never: ['daemon', 'finance', 'member', 'token', 'user'],
  },
  {
    kind: 'a member added',
    forms: BOTH,
    to: onBig((team) => team.members.push(13)),
    atMost: 10,
    writes: { token: 1 }, // that user's one token
    never: NO_RESOURCE,
  },
  {
    kind: 'a member removed',
    forms: BOTH,
    to: onBig((team) => (team.members = team.members.filter((id) => id !== 12))),
    atMost: 10,
    writes: { token: 1 },
    never: NO_RESOURCE,
  },
  {
    kind: 'a token added',
    forms: BOTH,
    to: (world) => [changed(world, (next) => next.tokens.push(token(10, 80)))],
    atMost: 10,
    writes: { token: 1 },
    never: NO_TEAM,
  },
  {
    kind: "a token's abilities changed",
    forms: BOTH,
    to: (world) => [changed(world, (next) => (next.tokens[1]!.abilities = ['daemons:read']))],
    atMost: 10,
    writes: { token: 1 },
    never: NO_TEAM,
  },
  {
    kind: 'a user removed (its member, its token)',
    forms: ['changes'],
    to: onBig((team, world) => {
      team.members = team.members.filter((id) => id !== 12);
      world.users = world.users.filter((user) => user.id !== 12);
      world.tokens = world.tokens.filter((t) => t.userId !== 12);
    }),
    atMost: 10,
    never: NO_RESOURCE,
  },
  // Last: no row starts from a table without the big team.
  {
    kind: 'a team removed (its 2,300 items swept)',
    forms: ['changes'],
    to: (world) => [changed(world, (next) => (next.teams = next.teams.filter((team) => team.id !== BIG.id)))],
    atMost: 2_400,
    // Each item once, swept; and its three members' tokens, which lose it.
    writes: { project: PROJECTS, daemon: 300, token: 3 },
  },
];

interface Row extends Change {
  form: Form;
  /** The worlds before and after, for what the API must serve; and those it goes through. */
  was: WorldModel;
  worlds: WorldModel[];
  is: WorldModel;
}

/** The rows of a form, in the table's order: the first loads the big team; the sync's last removes it. */
const rowsOf = (form: Form): Row[] =>
  CHANGES.filter((change) => change.forms.includes(form)).map((change) => {
    const was = change.from ?? BASE;
    const worlds = change.to(was);
    return { ...change, form, was, worlds, is: worlds.at(-1)! };
  });

/** The row's writes, each in its form. */
const stepsOf = (row: Row): StateWrite[] =>
  row.worlds.map((world, i) =>
    row.form === 'whole' ? wholeForm(world) : changesForm(i === 0 ? row.was : row.worlds[i - 1]!, world, row.touched),
  );

const EMPTY: WorldModel = { teams: [], users: [], tokens: [] };
const figures: string[] = [];
afterAll(() => console.info(`items written per change (lock, ledger and sweep included):\n${figures.join('\n')}`));

// Each form on a table of its own, its rows one after another; the two forms side by side.
describe.concurrent.each(BOTH)('in the %s form', (form) => {
  let table: TestTable;
  let writer: Awaited<ReturnType<typeof desiredWriter>>;
  /** The world the table holds, and the one `writer.undo()` takes it back to; none at first, or after a write failed. */
  let holds: { world: WorldModel; undo?: WorldModel } | undefined;
  afterAll(() => writer?.stop());

  it.each(rowsOf(form))('$kind: at most $atMost items', { timeout: 120_000, concurrent: false }, async (row) => {
    process.env.LOG_LEVEL = 'SILENT';
    if (!holds) {
      await writer?.stop();
      table = await freshTable();
      writer = await desiredWriter(table, form);
    }
    const { world, undo } = holds ?? { world: EMPTY };
    holds = undefined;
    // To the row's `before`, uncounted: the row before undone, or (the first row's) written.
    if (world !== row.was) await (undo === row.was ? writer.undo() : writer.write(changesForm(world, row.was)));
    const count = await writer.count(async () => {
      for (const step of stepsOf(row)) await writer.write(step);
    });
    holds = { world: row.is, undo: row.was };
    // Every key where a list is short enough to read, the kinds' counts where it is not.
    const keys = count.keys.length <= 100 ? count.keys.join('\n') : JSON.stringify(count.toJSON());
    figures.push(`${row.kind} (${row.form}): ${count.keys.length} ${JSON.stringify(count.toJSON())}`);
    expect(count.keys.length, keys).toBeLessThanOrEqual(row.atMost);
    for (const [kind, times] of Object.entries(row.writes ?? {}))
      expect(count.of(kind as WrittenKind), keys).toBe(times);
    expect(count.of(...(row.never ?? [])), keys).toBe(0);
    expect(count.keys.filter((key) => teamOfKey(key, SLUGS) === BYSTANDER.id)).toEqual([]);
    await expectServed(tableApi(table), row.was, row.is);
  });
});

/**
 * The API serves `is`: each token answers as its abilities and its user's teams say (a token gone:
 * 401), each team's totals and finances are its own, and the page where the first project changed is
 * (or was) holds what the world does. The requests go together: a row waits on one at a time enough.
 */
async function expectServed(api: ReturnType<typeof tableApi>, was: WorldModel, is: WorldModel) {
  const gone = was.tokens.filter((w) => !is.tokens.some((i) => i.sanctumId === w.sanctumId));
  const status = async (target: string, token: TokenModel) => (await api.get(target, { token: token.secret })).status;
  const answers = await Promise.all([
    ...gone.map(async (t) => [t.sanctumId, await status(`/api/${BIG.slug}/projects`, t)]),
    ...is.tokens.map(async (t) => [t.sanctumId, await status(`/api/${BIG.slug}/projects?per_page=1`, t)]),
  ]);
  const expected = is.tokens.map((t) => {
    const member = is.teams.some((team) => team.id === BIG.id && team.members.includes(t.userId));
    const reads = t.abilities.some((ability) => ability === '*' || ability === 'projects:read');
    return [t.sanctumId, reads ? (member ? 200 : 404) : 403];
  });
  expect(answers, 'the tokens').toEqual([...gone.map((t) => [t.sanctumId, 401]), ...expected]);
  await Promise.all(is.teams.map((team) => expectTeamServed(api, was, team)));
}

async function expectTeamServed(api: ReturnType<typeof tableApi>, was: WorldModel, team: TeamModel) {
  const secret = secretOf(60 + team.members[0]!);
  const before = was.teams.find((t) => t.id === team.id);
  const first = [...new Set([...team.projects.keys(), ...(before?.projects.keys() ?? [])])]
    .sort((a, b) => a - b)
    .find((id) => JSON.stringify(team.projects.get(id)) !== JSON.stringify(before?.projects.get(id)));
  const model = new ListModel([...team.projects.values()] as { id: number; name: string }[]);
  const page = first === undefined ? undefined : model.pageOf(first, 50);
  const [projects, daemons, finances, answer] = await Promise.all(
    [
      'projects?per_page=50',
      'daemons?per_page=1',
      'finances',
      ...(page === undefined ? [] : [`projects?per_page=50&page=${page}`]),
    ].map((target) => api.get(`/api/${team.slug}/${target}`, { token: secret })),
  );
  expect([projects!.body.meta.total, daemons!.body.meta.total]).toEqual([team.projects.size, team.daemons.size]);
  const cents = [...team.servers.map((s) => s.monthly_cost), ...team.costs.map((c) => c.amount)].map((amount) =>
    Math.round(Number(amount) * 100),
  );
  expect(finances!.body.totals.EUR).toBe(cents.reduce((n, c) => n + c, 0) / 100);
  if (page === undefined) return;
  expect(answer!.body.data.map((p: { id: number; name: string }) => ({ id: p.id, name: p.name }))).toEqual(
    model.page(page, 50),
  );
}
