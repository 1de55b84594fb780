import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { callRecorder } from '../support/calls.ts';
import { freshTable, importDocument, scanAll, type TestTable } from '../support/dynamodb.ts';
import { ListModel, spacedProjects } from '../support/list-changes.ts';
import { server, snapshot, team, token, user } from '../support/snapshots.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * A list given whole (an import's) is compared with the ids and hashes kept beside its generation
 * (shared/write/list-hashes.ts), not read back whole: a change of one item in a list of 5,000 reads
 * a few dozen read units, not the list's 250 and more. What changed since the generation was written
 * (items changed, removed, added between slots or after the last) is read by its key, and a
 * generation without its hashes is read whole, as before: each import still serves the snapshot.
 */
const COUNT = 5_000;
const SECRET = 'list-hashes-secret';
let table: TestTable;
let recorder: ReturnType<typeof callRecorder>;
const model = new ListModel(spacedProjects(1, COUNT));
/** Read units of each import that compared the list with its hashes. */
const byHashes: number[] = [];

const document = () =>
  snapshot({
    teams: [team(1, 'hashed')],
    users: [user(10, [1])],
    tokens: [token(10, SECRET)],
    servers: [server(101, 1, '10.00')],
    projects: model.ids.map((id) => ({
      id,
      team_id: 1,
      client_id: null,
      name: model.names.get(id)!,
      slug: `project-${id}`,
      created_at: '2026-01-02T03:04:05+00:00',
    })),
  });

/** Imports the model; the read units the import used, and whether the API then serves the model whole. */
async function imported() {
  const { calls } = await recorder.trace(() => importDocument(table, document()));
  const pages = Math.ceil(model.ids.length / 50);
  const api = tableApi(table);
  for (const page of [1, Math.ceil(pages / 2), pages]) {
    const answer = await api.get(`/api/hashed/projects?per_page=50&page=${page}`, { token: SECRET });
    expect(answer.body.meta.total).toBe(model.ids.length);
    expect(answer.body.data.map((p: { id: number; name: string }) => ({ id: p.id, name: p.name }))).toEqual(
      model.page(page, 50),
    );
  }
  return calls.rcu;
}

beforeAll(async () => {
  process.env.LOG_LEVEL = 'SILENT';
  table = await freshTable();
  recorder = callRecorder(table.doc);
  await imported();
}, 120_000);

describe('an import of a list given whole', () => {
  const middle = () => model.ids[Math.floor(model.ids.length / 2)]!;

  it.each([
    ['a project renamed in the middle', () => model.set(middle(), `Renamed ${middle()}`)],
    ['a project added after the last', () => model.set(model.ids.at(-1)! + 2, 'Added after the last')],
    ['a project removed from the middle', () => model.remove(middle())],
    ['a project added in the middle', () => model.set(middle() + 1, 'Added in the middle')],
    ['a project renamed near the start', () => model.set(model.ids[10]!, 'Renamed once')],
    ['that project renamed again', () => model.set(model.ids[10]!, 'Renamed twice')],
  ])('reads its hashes and the items changed since, not the list: %s', async (_what, change) => {
    change();
    byHashes.push(await imported());
    expect(byHashes.at(-1)).toBeLessThan(60);
  });

  it('reads the list whole where its generation has no hashes, and still serves the snapshot', async () => {
    const hashes = (await scanAll(table)).filter((item) => /^TEAM#1#G[^#]+#projects#H$/.test(String(item.pk)));
    expect(hashes.length).toBe(Math.ceil(COUNT / 1_000));
    for (const { pk, sk } of hashes) {
      await table.doc.send(new DeleteCommand({ TableName: table.tableName, Key: { pk, sk } }));
    }
    model.set(model.ids[20]!, 'Renamed without hashes');
    const whole = await imported();
    console.info(`read units of an import: ${byHashes.join(', ')} by the hashes; ${whole} reading the list whole`);
    expect(whole).toBeGreaterThan(4 * Math.max(...byHashes));
  });
});
