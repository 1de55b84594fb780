import { generationPartition, type ListResource } from '../table/keys.ts';
import { allPlacedItems } from '../table/list-layout.ts';
import type { ListPart } from './items.ts';
import type { StoredItem } from './list-edits.ts';
import { queryPages } from './reads.ts';
import type { TableRef } from './writer.ts';

/**
 * A list as the table holds it, read whole for a writer (strongly consistent, a page at a time): the
 * items the head names, in order, with their ids. What a change by the item is computed against
 * (list-edits.ts), and what a list given whole is compared with, item by item.
 */
export async function readStoredList(
  t: TableRef,
  teamId: number,
  list: ListResource,
  part: ListPart,
): Promise<StoredItem[]> {
  const { layout } = part;
  if (layout.count === 0) return [];
  const found = new Map<string, string>();
  const partition = generationPartition(teamId, layout.generation, list);
  for await (const page of queryPages(t.doc, t.tableName, partition)) {
    for (const item of page) found.set(item.sk, String(item.j));
  }
  return allPlacedItems(layout).map((placed) => {
    const json = found.get(placed.key);
    if (json === undefined) {
      throw new Error(`team ${teamId}: its ${list} head names ${placed.key}, which the table does not hold`);
    }
    return {
      id: placed.insertedId ?? idOf(json),
      json,
      key: placed.key,
      slot: placed.slot,
      inserted: placed.insertedId !== undefined,
      ...(placed.revision !== undefined && { revision: placed.revision }),
    };
  });
}

/** An item's id, from the JSON as served: it always starts with it (shared/domain/served-json.ts). */
function idOf(json: string): number {
  const match = /^\{"id":(\d+)[,}]/.exec(json);
  if (!match) throw new Error(`a stored item does not start with its id: ${json.slice(0, 40)}`);
  return Number(match[1]);
}
