import { beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { daemons, environment, projects, server, snapshot, team, token, user } from '../support/snapshots.ts';
import { countedTable, type WriteCount } from '../support/writes.ts';

/**
 * "It writes only what changed" (docs/contract.md, section 7; docs/storage.md, "Keeping up with a
 * source database"), counted: the items each kind of change writes, at the importing client's own
 * middleware stack (test/support/writes.ts), for a team of 2,000 projects and 300 daemons. The lease
 * an import takes and the locks of the teams it writes hold no data and are not counted as data.
 * That ETags follow their part is etags-follow-their-part.test.ts's.
 */
const PROJECTS = 2_000;
const DAEMONS_PER_ENVIRONMENT = 100;

type Change = {
  costs?: { team_id: number; label: string; amount: string; currency: string }[];
  serverCost?: string;
  daemonsInLastEnvironment?: number;
  projectName?: string;
  members?: number[];
};

/** The team as a snapshot, with one change applied. */
function big(change: Change = {}) {
  const members = change.members ?? [10, 11, 12];
  const daemonCounts = [
    DAEMONS_PER_ENVIRONMENT,
    DAEMONS_PER_ENVIRONMENT,
    change.daemonsInLastEnvironment ?? DAEMONS_PER_ENVIRONMENT,
  ];
  const projectList = projects(1, PROJECTS);
  if (change.projectName) projectList[1_234]!.name = change.projectName;
  return snapshot({
    teams: [team(1, 'big'), team(2, 'bystander')],
    users: [10, 11, 12, 13].map((id) => user(id, [...(members.includes(id) ? [1] : []), 2])),
    tokens: [10, 11, 12, 13].map((id) => token(id, `secret-of-${id}`)),
    environments: [environment(1, 1), environment(2, 1), environment(3, 1), environment(4, 2)],
    servers: [server(7, 1, change.serverCost ?? '24.15'), server(8, 1, '12.00'), server(9, 2, '5.00')],
    projects: [...projectList, ...projects(2, 3)],
    daemons: [...daemonCounts.flatMap((count, i) => daemons(i + 1, 7, count)), ...daemons(4, 9, 2)],
    costs: change.costs ?? [
      { team_id: 1, label: 'Backups', amount: '5.00', currency: 'EUR' },
      { team_id: 1, label: 'Load balancers', amount: '12.00', currency: 'EUR' },
      { team_id: 2, label: 'Backups', amount: '1.00', currency: 'EUR' },
    ],
  });
}

let table: TestTable;
let api: TestApi;
let counted: ReturnType<typeof countedTable>;
beforeAll(async () => {
  process.env.LOG_LEVEL = 'SILENT';
  table = await freshTable();
  counted = countedTable(table);
  api = await startApi(table);
}, 60_000);

/** Imports the team with this change, counting what the import writes. */
const importing = (change: Change = {}): Promise<WriteCount> =>
  counted.count(() => importDocument(counted.table, big(change)));

describe('an import writes only what changed (a team of 2,000 projects and 300 daemons)', () => {
  it('writes every item the first time, and no data at all when the same snapshot comes again', async () => {
    const first = await importing();
    expect(first.of('project')).toBe(PROJECTS + 3);
    expect(first.of('daemon')).toBe(302);
    const again = await importing();
    expect(again.toJSON()).toEqual({ lock: 2 });
    expect(again.data).toBe(0);
  }, 120_000);

  it('writes at most 50 items, and no project or daemon, for one cost line', async () => {
    const writes = await importing({
      costs: [
        { team_id: 1, label: 'Backups', amount: '6.00', currency: 'EUR' },
        { team_id: 1, label: 'Load balancers', amount: '12.00', currency: 'EUR' },
        { team_id: 2, label: 'Backups', amount: '1.00', currency: 'EUR' },
      ],
    });
    expect(writes.of('project', 'daemon', 'member', 'token', 'user')).toBe(0);
    expect(writes.data).toBeLessThanOrEqual(50);
    expect(writes.of('finance')).toBe(2);
  }, 60_000);

  it("writes at most 50 items, and no project or daemon, for one server's cost", async () => {
    const writes = await importing({ serverCost: '30.00' });
    expect(writes.of('project', 'daemon', 'member', 'token', 'user')).toBe(0);
    expect(writes.data).toBeLessThanOrEqual(50);
  }, 60_000);

  it('writes at most 50 items, and no project or daemon, for one daemon fewer', async () => {
    const writes = await importing({ serverCost: '30.00', daemonsInLastEnvironment: DAEMONS_PER_ENVIRONMENT - 1 });
    expect(writes.of('project', 'finance', 'member', 'token', 'user')).toBe(0);
    // The list changes by the item: its head says the slot is gone, and the ledger sweeps the old item later.
    expect(writes.of('daemon')).toBe(0);
    expect(writes.of('head')).toBe(2); // the daemons' head, by id and by slug
    expect(writes.data).toBeLessThanOrEqual(50);
  }, 60_000);

  it('writes at most 50 items, one project and no daemon, for one project renamed', async () => {
    const writes = await importing({
      serverCost: '30.00',
      daemonsInLastEnvironment: DAEMONS_PER_ENVIRONMENT - 1,
      projectName: 'renamed',
    });
    expect(writes.of('daemon', 'finance', 'member', 'token', 'user')).toBe(0);
    // Its new version beside the old one, which stays for readers of the old head until it is swept.
    expect(writes.of('project')).toBe(1);
    expect(writes.data).toBeLessThanOrEqual(50);
    const page = await api.get('/api/big/projects?per_page=5&page=247', { token: 'secret-of-10' });
    expect(page.body.data[4].name).toBe('renamed');
  }, 60_000);

  it("writes at most 50 items, and no resource item, for one member added; only that user's token and items", async () => {
    const change = {
      serverCost: '30.00',
      daemonsInLastEnvironment: DAEMONS_PER_ENVIRONMENT - 1,
      projectName: 'renamed',
    };
    expect((await api.get('/api/big/projects', { token: 'secret-of-13' })).status).toBe(404);
    const writes = await importing({ ...change, members: [10, 11, 12, 13] });
    expect(writes.of('project', 'daemon', 'finance')).toBe(0);
    expect(writes.data).toBeLessThanOrEqual(50);
    expect(writes.of('token')).toBe(1); // user 13's one token
    expect((await api.get('/api/big/projects', { token: 'secret-of-13' })).status).toBe(200);
    const removed = await importing({ ...change, members: [10, 11, 12] });
    expect(removed.of('project', 'daemon', 'finance')).toBe(0);
    expect(removed.of('token')).toBe(1);
    expect((await api.get('/api/big/projects', { token: 'secret-of-13' })).status).toBe(404);
  }, 60_000);

  it("never writes another team's items when one team changes", async () => {
    const writes = await importing({ serverCost: '31.00', projectName: 'again', members: [10, 12] });
    expect(writes.of('project')).toBe(1);
    expect(writes.keys.filter((key) => /^(TEAMREF#(2|bystander)|TEAM#2#|TEAMS 0*2$)/.test(key))).toEqual([]);
  }, 60_000);
});
