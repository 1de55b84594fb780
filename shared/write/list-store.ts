import { generationPartition, type ListResource } from '../table/keys.ts';
import { allPlacedItems, type PlacedItem } from '../table/list-layout.ts';
import type { ListPart } from './items.ts';
import type { StoredItem } from './list-edits.ts';
import { readItems, queryPages } from './reads.ts';
import type { TableRef } from './writer.ts';

/**
 * A list as the table holds it, read whole for a writer (strongly consistent, a page at a time): the
 * items the head names, in order, with their ids. What a compaction rewrites (compaction.ts), and
 * what a list given whole is compared with where its generation has no item hashes (list-hashes.ts).
 */
export async function readStoredList(
  table: TableRef,
  teamId: number,
  list: ListResource,
  part: ListPart,
): Promise<StoredItem[]> {
  const { layout } = part;
  if (layout.count === 0) return [];
  const found = new Map<string, string>();
  const partition = generationPartition(teamId, layout.generation, list);
  for await (const page of queryPages(table.doc, table.tableName, partition)) {
    for (const item of page) found.set(item.sk, String(item.j));
  }
  return allPlacedItems(layout).map((placed) => {
    const json = found.get(placed.key);
    if (json === undefined) throw notHeld(teamId, list, placed.key);
    return storedItem(placed, placed.insertedId ?? idOf(json), json);
  });
}

/** An item where its head places it, with its id and JSON (where known). */
export const storedItem = (placed: PlacedItem, id: number, json: string): StoredItem => ({
  id,
  json,
  key: placed.key,
  slot: placed.slot,
  inserted: placed.insertedId !== undefined,
  ...(placed.revision !== undefined && { revision: placed.revision }),
});

/** A list's head names an item the table does not hold. */
export const notHeld = (teamId: number, list: ListResource, key: string) =>
  new Error(`team ${teamId}: its ${list} head names ${key}, which the table does not hold`);

/**
 * A list as a change of a few of its items needs it (list-edits.ts, editList with `located`), without
 * reading it whole: a list of 100,000 items is 20 MB, 5,000 read units strongly consistent, at least
 * 1.7 s at one partition key's 3,000 a second. Every item's place comes from the head
 * (list-layout.ts); a binary search by id for each of `ids`, all in step (one BatchGetItem a round,
 * about 17 rounds for 100,000 items), reads only the items it looks at, and then the item where each
 * id is or would be. Items not read have no id (NaN) and no JSON. Where the searches would read more
 * than the list whole, it is read whole, and no place is `located`.
 */
export async function readStoredAround(
  table: TableRef,
  teamId: number,
  list: ListResource,
  part: ListPart,
  ids: Iterable<number>,
): Promise<{ stored: StoredItem[]; located?: Map<number, number> }> {
  const { layout } = part;
  // Many edits (a backlog of a busy team): one search an id reads more items, each a read unit of its
  // own, than the list read whole a page at a time, about 20 items of 200 bytes to a 4 KB unit
  // (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html).
  const unique = [...new Set(ids)];
  const searched = unique.length * (Math.log2(Math.max(2, layout.count / Math.max(1, unique.length))) + 2);
  if (searched > layout.count / 20) {
    return { stored: await readStoredList(table, teamId, list, part) };
  }
  const stored = allPlacedItems(layout).map((placed) => storedItem(placed, placed.insertedId ?? Number.NaN, ''));
  const read = new Set<number>();
  const partition = generationPartition(teamId, layout.generation, list);
  const readAt = async (indexes: number[]) => {
    const wanted = [...new Set(indexes)].filter((index) => !read.has(index));
    const keys = wanted.map((index) => ({ pk: partition, sk: stored[index]!.key }));
    const found = new Map((await readItems(table, keys)).map((item) => [item.sk, String(item.j)]));
    for (const index of wanted) {
      const item = stored[index]!;
      const json = found.get(item.key);
      if (json === undefined) throw notHeld(teamId, list, item.key);
      item.json = json;
      if (!item.inserted) item.id = idOf(json);
      read.add(index);
    }
  };
  const searches = unique.map((id) => ({ id, low: 0, high: stored.length }));
  const unsettled = (search: { low: number; high: number }) => search.low < search.high;
  for (let open = searches.filter(unsettled); open.length > 0; open = open.filter(unsettled)) {
    const middle = (search: { low: number; high: number }) => (search.low + search.high) >>> 1;
    await readAt(open.map(middle).filter((index) => Number.isNaN(stored[index]!.id)));
    for (const search of open) {
      const at = middle(search);
      if (stored[at]!.id < search.id) search.low = at + 1;
      else search.high = at;
    }
  }
  // Where each id is, or would go: that item read whole (whether it is the id, and its JSON).
  await readAt(searches.map((search) => search.low).filter((index) => index < stored.length));
  return { stored, located: new Map(searches.map((search) => [search.id, search.low])) };
}

/** An item's id, from the JSON as served: it always starts with it (shared/domain/served-json.ts). */
export function idOf(json: string): number {
  const match = /^\{"id":(\d+)[,}]/.exec(json);
  if (!match) throw new Error(`a stored item does not start with its id: ${json.slice(0, 40)}`);
  return Number(match[1]);
}
