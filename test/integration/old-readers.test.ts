import { beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../shared/api/bearer.ts';
import { toContractError } from '../../shared/api/http/errors.ts';
import { ShortPage, type TeamHead, TeamReader } from '../../shared/api/team-reader.ts';
import { createDynamoDbClient } from '../../shared/table/dynamodb-client.ts';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { ListModel, spacedProjects } from '../support/list-changes.ts';
import { server, snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * A replaced state stays readable 5 minutes (docs/contract.md, sections 7 and 9; docs/storage.md,
 * "Retention"): a request that read a list's head just before a change (its head names the keys of
 * the old state) reads its whole old state, page by page, for 5 minutes, whatever changed meanwhile:
 * items changed by the item (their old versions), or the list written whole as a new generation.
 * After that the writers sweep it, and such a page is refused (ShortPage: a 503), never served short
 * or mixed with the new state. Time is the writers' clock (the import's `clock`), moved past
 * retention; the sweep is the one every write ends with. A reader's head is read by the functions' own
 * reader (TeamReader), as a request reads it; each page is read as the request would read it next.
 */
const SECRET = 'old-readers-secret-01';
const PER_PAGE = 20;
const COUNT = 120;
const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;

let table: TestTable;
let reader: TeamReader;
const model = new ListModel(spacedProjects(1, COUNT));

/** Imports the team as the model has it, at the writers' clock `at`: the write ends with its sweep. */
const importAt = (at: number) =>
  importDocument(
    table,
    snapshot({
      teams: [team(1, 'old')],
      users: [user(10, [1])],
      tokens: [token(10, SECRET)],
      servers: [server(7, 1)],
      projects: model.ids.map((id) => ({
        id,
        team_id: 1,
        client_id: null,
        name: model.names.get(id)!,
        slug: `p-${id}`,
        created_at: '2026-01-02T03:04:05Z',
      })),
    }),
    { clock: () => at },
  );

const headNow = async () => (await reader.readTokenAndHead(hashToken(SECRET), 'old', 'projects')).team!;
/** A copy of the model as it is now: the state a head read now describes. */
const stateNow = () => model.ids.map((id) => ({ id, name: model.names.get(id)! }));

/** Every page a holder of `head` reads: the page's items, or 'short' where it was refused. */
async function pagesOf(head: TeamHead) {
  const pages: ({ id: number; name: string }[] | 'short')[] = [];
  for (let first = 1; first <= head.list.count; first += PER_PAGE) {
    const ordinals = { first, last: Math.min(first + PER_PAGE - 1, head.list.count) };
    try {
      const items = await reader.readPage(head, ordinals);
      pages.push(items.map((json) => JSON.parse(json)).map(({ id, name }) => ({ id, name })));
    } catch (error) {
      if (!(error instanceof ShortPage)) throw error;
      expect(toContractError(error).statusCode).toBe(503);
      pages.push('short');
    }
  }
  return pages;
}
const pagesOfState = (state: { id: number; name: string }[]) =>
  Array.from({ length: Math.ceil(state.length / PER_PAGE) }, (_, i) => state.slice(i * PER_PAGE, (i + 1) * PER_PAGE));

beforeAll(async () => {
  process.env.LOG_LEVEL = 'SILENT';
  table = await freshTable();
  reader = new TeamReader(createDynamoDbClient({ endpoint: table.endpoint, requestTimeoutMs: 10_000 }), {
    tableName: table.tableName,
  });
  await importAt(T0);
});

describe('a reader holding an old head', () => {
  it('reads its whole old state for 5 minutes after a change by the item, then is refused, never served short or mixed', async () => {
    const oldHead = await headNow();
    const oldState = stateNow();
    // Three renamed, two removed, two added: few enough to change by the item.
    const changedAt = T0 + MINUTE;
    for (const i of [5, 47, 101]) model.set(model.ids[i]!, `renamed ${i}`);
    for (const i of [30, 90]) model.remove(model.ids[i]!);
    for (const i of [10, 70]) model.set(model.ids[i]! + 1, `added ${i}`);
    await importAt(changedAt);
    const newHead = await headNow();
    expect(newHead.list.generation).toBe(oldHead.list.generation);
    expect(newHead.list.revision).toBeGreaterThan(oldHead.list.revision);
    expect(await pagesOf(newHead)).toEqual(pagesOfState(stateNow()));
    expect(await pagesOf(oldHead)).toEqual(pagesOfState(oldState));

    // 5 minutes on (a write then sweeps what is due): still whole.
    await importAt(changedAt + 5 * MINUTE);
    expect(await pagesOf(oldHead)).toEqual(pagesOfState(oldState));

    // Past retention: the old versions go. A page that needs one is refused; the others are whole.
    await importAt(changedAt + 7 * MINUTE);
    const late = await pagesOf(oldHead);
    const expected = pagesOfState(oldState);
    expect(late.filter((page) => page === 'short').length).toBeGreaterThan(0);
    late.forEach((page, i) => {
      if (page !== 'short') expect(page, `page ${i + 1}`).toEqual(expected[i]);
    });
    expect(await pagesOf(newHead)).toEqual(pagesOfState(stateNow()));
  });

  it('reads its whole old state for 5 minutes after the list is written whole, then is refused on every page', async () => {
    const oldHead = await headNow();
    const oldState = stateNow();
    // Half the list renamed: written whole, as a new generation beside.
    const rebuiltAt = T0 + 20 * MINUTE;
    for (const [i, id] of model.ids.entries()) if (i % 2 === 0) model.set(id, `rewritten ${i}`);
    await importAt(rebuiltAt);
    const newHead = await headNow();
    expect(newHead.list.generation).not.toBe(oldHead.list.generation);
    expect(await pagesOf(newHead)).toEqual(pagesOfState(stateNow()));
    expect(await pagesOf(oldHead)).toEqual(pagesOfState(oldState));

    await importAt(rebuiltAt + 5 * MINUTE);
    expect(await pagesOf(oldHead)).toEqual(pagesOfState(oldState));

    await importAt(rebuiltAt + 7 * MINUTE);
    expect((await pagesOf(oldHead)).every((page) => page === 'short')).toBe(true);
    expect(await pagesOf(newHead)).toEqual(pagesOfState(stateNow()));
  });
});
