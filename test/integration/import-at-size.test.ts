import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importSnapshot } from '../../commands/import/importer.ts';
import { validateSnapshotFile } from '../../commands/import/validation.ts';
import { lambdaContext, routeRequest } from '../../commands/local/api-gateway-event.ts';
import { readApiConfig } from '../../shared/api/config.ts';
import { listHandler } from '../../shared/api/http/handlers.ts';
import { TeamReader } from '../../shared/api/team-reader.ts';
import { createDynamoDbClient } from '../../shared/table/dynamodb-client.ts';
import { sweepReplaced } from '../../shared/write/ledger.ts';
import { callRecorder } from '../support/calls.ts';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { limitedDynamoDb, throughCommandClients } from '../support/limited-dynamodb.ts';
import { itemsOfTeam, ListModel, spacedProjects } from '../support/list-changes.ts';
import { server, snapshot, team, token, user } from '../support/snapshots.ts';
import { tableApi } from '../support/table-api.ts';
import { snapshotFile } from '../support/validate.ts';
import { countedOn, type WriteCount } from '../support/writes.ts';

/**
 * "At any size" (docs/contract.md, section 9) through the import: each change is an import of a
 * snapshot that holds the team (the import diffs the list given whole with the list stored, and
 * changes it by the item), through the limiter and the import's own clients. Counted at those
 * clients: the import's lease, the team's lock, the items, the ledger, and the sweep of what the
 * change replaced (the ledger's sweep, run at the writers' clock moved past retention, as the next
 * write runs it). Then the read floor at depth, on the 100,000 after its changes.
 *
 * The import's own lease is left out of a change's items, as the sync's is in sync-at-size.test.ts:
 * it is the command's, taken once a run however many teams change, and renewed every 15 s however
 * long the run (a run of 40 s writes it four times).
 *
 * The teams are loaded once, by one import that does not go through the limiter: a load's time is
 * not what this file measures (sync-at-size.test.ts loads 100,000 through it), and loading 122,000
 * projects at 1,000 write units a second would add two minutes. An import of a team of 100,000
 * validates its whole file (2 to 4 s here), compares the list with the ids and hashes kept beside it
 * (shared/write/list-hashes.ts) and reads its file again only as far as the items it writes: about
 * 5 s a change on this machine, so the 100,000 are imported for the three changes the 10 s rule
 * names, and twenty removals one by one are imported at 2,000 only; the sync's file has every case
 * at every size.
 */
const live = limitedDynamoDb();
const SIZES = [
  { teamId: 3, slug: 'two-thousand', count: 2_000, userId: 30 },
  { teamId: 4, slug: 'twenty-thousand', count: 20_000, userId: 40 },
  { teamId: 1, slug: 'huge', count: 100_000, userId: 10 },
];
const OTHER = { teamId: 2, slug: 'other', userId: 20 };
const slugs = new Map([...SIZES, OTHER].map((t) => [t.slug, t.teamId]));
const secretOf = (userId: number) => `import-at-size-secret-${userId}`;
const HUGE = SIZES[2]!;

let direct: TestTable;
let limited: TestTable;
let counted: ReturnType<typeof countedOn>;
let api: ReturnType<typeof tableApi>;
let ahead = 0;
const clock = () => Date.now() + ahead;
const models = new Map(SIZES.map((s) => [s.teamId, new ListModel(spacedProjects(s.teamId, s.count))]));

/** A snapshot of one team as the model has it: its member, that member's token, a server. */
function teamSnapshot({ teamId, slug, userId }: (typeof SIZES)[number]) {
  const model = models.get(teamId)!;
  return snapshot({
    teams: [team(teamId, slug)],
    users: [user(userId, [teamId])],
    tokens: [token(userId, secretOf(userId))],
    servers: [server(100 + teamId, teamId, '10.00')],
    projects: model.ids.map((id) => ({
      id,
      team_id: teamId,
      client_id: null,
      name: model.names.get(id)!,
      slug: `project-${id}`,
      created_at: '2026-01-02T03:04:05+00:00',
    })),
  });
}
const otherSnapshot = (extra: { amount?: string; members?: number[]; abilities?: string[] } = {}) =>
  snapshot({
    teams: [team(OTHER.teamId, OTHER.slug)],
    users: (extra.members ?? [OTHER.userId]).map((id) => user(id, [OTHER.teamId])),
    tokens: (extra.members ?? [OTHER.userId]).map((id) =>
      token(id, secretOf(id), id === OTHER.userId ? (extra.abilities ?? ['*']) : ['*']),
    ),
    servers: [server(102, OTHER.teamId, '10.00')],
    costs: [{ team_id: OTHER.teamId, label: 'Backups', amount: extra.amount ?? '5.00', currency: 'EUR' }],
  });

beforeAll(async () => {
  process.env.LOG_LEVEL = 'SILENT';
  direct = await freshTable();
  await importDocument(
    direct,
    snapshot({
      teams: [...SIZES, OTHER].map((t) => team(t.teamId, t.slug)),
      users: [...SIZES, OTHER].map((t) => user(t.userId, [t.teamId])),
      tokens: [...SIZES, OTHER].map((t) => token(t.userId, secretOf(t.userId))),
      servers: [...SIZES, OTHER].map((t) => server(100 + t.teamId, t.teamId, '10.00')),
      projects: SIZES.flatMap((s) => spacedProjects(s.teamId, s.count)),
      costs: [{ team_id: OTHER.teamId, label: 'Backups', amount: '5.00', currency: 'EUR' }],
    }),
    { clock },
  );
  limited = throughCommandClients({ ...direct }, live.endpoint);
  counted = countedOn(limited);
  api = tableApi(limited);
}, 600_000);

/** The page of `teamId`'s projects that holds `id` is what the model says, and so is the total. */
const serves = async (teamId: number, id: number) => {
  const model = models.get(teamId)!;
  const page = model.pageOf(id, 50);
  const answer = await api.get(`/api/${teamId}/projects?per_page=50&page=${page}`, {
    token: secretOf(SIZES.find((s) => s.teamId === teamId)!.userId),
  });
  if (answer.status !== 200 || answer.body.meta.total !== model.ids.length) return false;
  const got = answer.body.data.map((p: { id: number; name: string }) => ({ id: p.id, name: p.name }));
  return JSON.stringify(got) === JSON.stringify(model.page(page, 50));
};

/**
 * Imports `document` through the limiter, counting what it writes and then the sweep of what it
 * replaced; says how long the import took in all (pass 1, then the write) and when the API first
 * served `served` (a check polled while the import runs), from the start of the import.
 */
async function imported(document: unknown, served?: () => Promise<boolean>) {
  const count: WriteCount = counted.restart();
  const started = performance.now();
  let servedAt: number | undefined;
  let importing = true;
  const watching = (async () => {
    while (served && importing && servedAt === undefined) {
      if (await served()) servedAt = performance.now() - started;
      else await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const path = await snapshotFile(document);
  const validation = await validateSnapshotFile(path);
  if (!validation.ok) throw new Error(validation.problems.join('\n'));
  const validatedAt = performance.now() - started;
  await importSnapshot(limited.doc, limited.tableName, validation.snapshot, { clock, bulk: limited.bulk });
  const doneAt = performance.now() - started;
  importing = false;
  await watching;
  if (served && servedAt === undefined) servedAt = (await served()) ? doneAt : Number.NaN;
  // The next write's sweep, once what this one replaced has been out of use past retention.
  ahead += 7 * 60_000;
  await sweepReplaced(limited, clock());
  return { count, validatedAt, doneAt, servedAt: servedAt ?? Number.NaN };
}

const figures: string[] = [];
afterAll(() => console.info(`items written per change by the import (its sweep included):\n${figures.join('\n')}`));

describe.each(SIZES)('in a team of $count projects, an import', (size) => {
  const { teamId, count } = size;
  const model = () => models.get(teamId)!;
  const middle = () => model().ids[Math.floor(model().ids.length / 2)]!;
  const served: { what: string; servedAt: number }[] = [];
  /** A change of the model, imported; the items it wrote for its team, and its times. */
  const change = async (what: string, id: number, apply: () => void) => {
    apply();
    const {
      count: written,
      validatedAt,
      doneAt,
      servedAt,
    } = await imported(teamSnapshot(size), () => serves(teamId, id));
    const items = itemsOfTeam(written, teamId, slugs).filter((key) => !key.startsWith('IMPORT '));
    figures.push(
      `${count}: ${what} ${items.length} items; validated in ${(validatedAt / 1000).toFixed(1)} s, ` +
        `served at ${(servedAt / 1000).toFixed(1)} s, done at ${(doneAt / 1000).toFixed(1)} s`,
    );
    expect(await serves(teamId, id)).toBe(true);
    served.push({ what, servedAt });
    return { items, servedAt };
  };

  it('writes no data for the same snapshot again', async () => {
    const { count: written } = await imported(teamSnapshot(size));
    expect(written.data, written.keys.join('\n')).toBe(0);
  }, 120_000);

  it('writes at most 10 items for a project renamed', async () => {
    const id = middle();
    const { items } = await change('renamed', id, () => model().set(id, `Renamed ${id}`));
    expect(items.length, items.join('\n')).toBeLessThanOrEqual(10);
  }, 120_000);

  it('writes at most 10 items for a project added after the last', async () => {
    const id = model().ids.at(-1)! + 2;
    const { items } = await change('added after the last', id, () => model().set(id, `Added ${id}`));
    expect(items.length, items.join('\n')).toBeLessThanOrEqual(10);
  }, 120_000);

  it('writes at most 50 items for a project removed from the middle', async () => {
    const id = middle();
    const { items } = await change('removed', id, () => model().remove(id));
    expect(items.length, items.join('\n')).toBeLessThanOrEqual(50);
  }, 120_000);

  it.skipIf(count > 20_000)(
    'writes at most 50 items for a project added in the middle',
    async () => {
      const id = middle() + 1;
      const { items } = await change('added in the middle', id, () => model().set(id, `Added ${id}`));
      expect(items.length, items.join('\n')).toBeLessThanOrEqual(50);
    },
    120_000,
  );

  it.skipIf(count > 2_000)(
    'writes at most 1,000 items in all for 20 projects removed from the middle one by one',
    async () => {
      let total = 0;
      for (let i = 0; i < 20; i++) {
        const id = middle();
        model().remove(id);
        const { count: written } = await imported(teamSnapshot(size));
        total += itemsOfTeam(written, teamId, slugs).filter((key) => !key.startsWith('IMPORT ')).length;
      }
      figures.push(`${count}: 20 removed one by one ${total} items in all`);
      expect(total).toBeLessThanOrEqual(1_000);
    },
    600_000,
  );

  /**
   * Each change served within 10 s of the import starting, through the limiter, pass 1 over the
   * snapshot file included: at 100,000 mostly pass 1's validation of the file, then the plan (the
   * list's hashes, 400 read units where the list itself is 5,000) and pass 2 up to the changed item.
   */
  it('serves each change within 10 s of the import starting', () => {
    expect(served.length).toBeGreaterThan(0);
    for (const { what, servedAt } of served) expect(servedAt, what).toBeLessThanOrEqual(10_000);
  });
});

describe('an import of a cost line, a member, a token: as before', () => {
  it('writes at most 50 items, no project, for a cost line', async () => {
    const { count } = await imported(otherSnapshot({ amount: '6.00' }));
    figures.push(`cost line: ${count.data} data items`);
    expect(count.of('project', 'daemon', 'member', 'token', 'user')).toBe(0);
    expect(count.data).toBeLessThanOrEqual(50);
  });

  it("writes at most 50 items, that user's one token among them, for a member added", async () => {
    const { count } = await imported(otherSnapshot({ amount: '6.00', members: [OTHER.userId, 50] }));
    figures.push(`member: ${count.data} data items`);
    expect(count.of('project', 'daemon', 'finance')).toBe(0);
    expect(count.data).toBeLessThanOrEqual(50);
  });

  it('writes that one token for a token changed', async () => {
    const { count } = await imported(
      otherSnapshot({ amount: '6.00', members: [OTHER.userId, 50], abilities: ['daemons:read'] }),
    );
    figures.push(`token: ${count.data} data items`);
    expect(count.of('token')).toBe(1);
    expect(count.of('project', 'daemon', 'finance', 'member', 'head')).toBe(0);
  });
});

describe('the read floor at depth, on the team of 100,000 after its changes', () => {
  type Handler = (event: unknown, context: unknown) => Promise<APIGatewayProxyStructuredResultV2>;
  /** A warm list function on the table, whose every DynamoDB call is counted (as read-cost.test.ts does). */
  function listFunction() {
    const client = createDynamoDbClient({ endpoint: direct.endpoint, requestTimeoutMs: 10_000 });
    const recorder = callRecorder(client);
    const runtime = {
      config: readApiConfig({ TABLE_NAME: direct.tableName }),
      reader: new TeamReader(client, { tableName: direct.tableName }),
    };
    const handler = listHandler('projects', runtime) as unknown as Handler;
    return async (target: string) => {
      const rawHeaders = ['Host', 'api.example.com', 'Authorization', `Bearer ${secretOf(HUGE.userId)}`];
      const routed = routeRequest({ method: 'GET', target, rawHeaders, sourceIp: '127.0.0.1' });
      if (!routed.route) throw new Error(`no route for ${target}`);
      const { result, calls } = await recorder.trace(() =>
        handler(routed.event, lambdaContext('projects', 10_000, 'test')),
      );
      return {
        status: result.statusCode!,
        body: JSON.parse(String(result.body)),
        rcu: calls.rcu,
        roundTrips: calls.sequentialRoundTrips,
      };
    };
  }

  it.each([
    [20, 1, 1.5],
    [20, 2_000, 1.5],
    [50, 1, 2.5],
    [50, 2_000, 2.5],
  ])('reads a page of %i at page %i for %f RCU, one round trip warm', async (perPage, page, rcu) => {
    const request = listFunction();
    const target = `/api/${HUGE.slug}/projects?per_page=${perPage}&page=${page}`;
    const first = await request(target);
    const warm = await request(target);
    const model = models.get(HUGE.teamId)!;
    expect(first.status).toBe(200);
    expect(first.body.data.map((p: { id: number }) => p.id)).toEqual(model.page(page, perPage).map((p) => p.id));
    expect(first.body.meta.total).toBe(model.ids.length);
    expect([first.rcu, warm.rcu, warm.roundTrips]).toEqual([rcu, rcu, 1]);
  });

  it('reads the page that holds a project renamed a moment ago for 1.5 RCU too', async () => {
    const model = models.get(HUGE.teamId)!;
    const id = model.ids[39_990]!;
    model.set(id, `Renamed again ${id}`);
    // Imported without the sweep: the version it replaced is still in the page's key range.
    const path = await snapshotFile(teamSnapshot(HUGE));
    const validation = await validateSnapshotFile(path);
    if (!validation.ok) throw new Error(validation.problems.join('\n'));
    await importSnapshot(direct.doc, direct.tableName, validation.snapshot, { clock });
    const request = listFunction();
    const page = model.pageOf(id, 20);
    const target = `/api/${HUGE.slug}/projects?per_page=20&page=${page}`;
    await request(target);
    const warm = await request(target);
    expect(warm.body.data.map((p: { name: string }) => p.name)).toContain(`Renamed again ${id}`);
    expect([warm.rcu, warm.roundTrips]).toEqual([1.5, 1]);
  }, 120_000);
});
