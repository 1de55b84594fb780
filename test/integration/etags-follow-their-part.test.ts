import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { daemons, environment, projects, server, snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * "A list's ETag changes when its part changes, and only then" (docs/contract.md, section 7, "It
 * writes only what changed"): a finance change leaves a client's cached project pages valid (304),
 * on a team of 2,000 projects and 300 daemons imported, then imported again with its server's cost
 * changed. What each change writes is write-cost.test.ts's.
 */
const PROJECTS = 2_000;
const DAEMONS_PER_ENVIRONMENT = 100;

type Change = {
  serverCost?: string;
  projectName?: string;
  members?: number[];
};

/** The team as a snapshot, with one change applied. */
function big(change: Change = {}) {
  const members = change.members ?? [10, 11, 12];
  const projectList = projects(1, PROJECTS);
  if (change.projectName) projectList[1_234]!.name = change.projectName;
  return snapshot({
    teams: [team(1, 'big'), team(2, 'bystander')],
    users: [10, 11, 12, 13].map((id) => user(id, [...(members.includes(id) ? [1] : []), 2])),
    tokens: [10, 11, 12, 13].map((id) => token(id, `secret-of-${id}`)),
    environments: [environment(1, 1), environment(2, 1), environment(3, 1), environment(4, 2)],
    servers: [server(7, 1, change.serverCost ?? '24.15'), server(8, 1, '12.00'), server(9, 2, '5.00')],
    projects: [...projectList, ...projects(2, 3)],
    daemons: [
      ...[1, 2, 3].flatMap((environment) => daemons(environment, 7, DAEMONS_PER_ENVIRONMENT)),
      ...daemons(4, 9, 2),
    ],
    costs: [
      { team_id: 1, label: 'Backups', amount: '5.00', currency: 'EUR' },
      { team_id: 1, label: 'Load balancers', amount: '12.00', currency: 'EUR' },
      { team_id: 2, label: 'Backups', amount: '1.00', currency: 'EUR' },
    ],
  });
}

let table: TestTable;
let api: TestApi;
/** Imports the team with this change. */
const importing = (change: Change = {}) => importDocument(table, big(change));

beforeAll(async () => {
  process.env.LOG_LEVEL = 'SILENT';
  table = await freshTable();
  api = await startApi(table);
  // The state the test below changes: its project 1,235 renamed, and user 11 no member.
  await importing({ serverCost: '31.00', projectName: 'again', members: [10, 12] });
}, 120_000);
afterAll(() => api?.close());

describe('ETags follow their part', () => {
  it('keeps a project page answering 304 after a change of finances only', async () => {
    const first = await api.get('/api/big/projects?per_page=20&page=3', { token: 'secret-of-10' });
    expect(first.status).toBe(200);
    const etag = first.headers.get('etag')!;
    const finances = await api.get('/api/big/finances', { token: 'secret-of-10' });
    await importing({ serverCost: '99.00', projectName: 'again', members: [10, 12] });
    const revalidated = await api.get('/api/big/projects?per_page=20&page=3', {
      token: 'secret-of-10',
      headers: { 'if-none-match': etag },
    });
    expect(revalidated.status).toBe(304);
    const financesAfter = await api.get('/api/big/finances', {
      token: 'secret-of-10',
      headers: { 'if-none-match': finances.headers.get('etag')! },
    });
    expect(financesAfter.status).toBe(200);
    expect(financesAfter.headers.get('etag')).not.toBe(finances.headers.get('etag'));
  }, 60_000);
});
