import {
  baseItemKey,
  insertedItemKey,
  type ListLayout,
  type OverlayEntry,
  overlayBytes,
} from '../table/list-layout.ts';

/**
 * A change of a list by the item (docs/storage.md, "Lists that change by the item, at any size"): the
 * items given are written at new keys beside the ones readers use, and the head's overlay says where
 * everything is (shared/table/list-layout.ts). Nothing here reads or writes the table: it works on
 * the list as a writer read it, and says what to write and what the new head holds.
 */

/** An item of a list as stored: its id, its JSON as served, where it sits. */
export interface StoredItem {
  id: number;
  json: string;
  key: string;
  /** The base slot it holds, or the slot it was added after. */
  slot: number;
  /** Added after its slot (not a base slot of the generation). */
  inserted: boolean;
  /** The list revision that wrote this version (undefined: a base slot's first version). */
  revision?: number;
  /** itemHash of its JSON, where a writer knows it without the JSON (then `json` is empty: list-hashes.ts). */
  hash?: bigint;
}

/** What a list should hold for one id: its JSON, or null for no such item. */
export interface ListEdit {
  id: number;
  json: string | null;
}

export interface EditedList {
  layout: ListLayout;
  /** The items to write before the head switches. */
  writes: { id: number; key: string; json: string }[];
  /** Keys the old head names and the new one does not: swept once replaced for five minutes. */
  replaced: string[];
  /** JSON that left the list, and JSON that came in: the list's fingerprint follows them. */
  left: string[];
  came: string[];
  /** The list as stored after the change, in order (where `located` was given, only its places are known whole). */
  items: StoredItem[];
}

/**
 * Past this many bytes of overlay the list is rewritten dense as a new generation, beside the one
 * readers use (compaction). A list's head holds little else, so it stays within one 4 KB read unit
 * with room for the changes that keep landing by the item while a compaction runs.
 */
export const OVERLAY_COMPACT_BYTES = 2_000;

const byId = (items: readonly StoredItem[], id: number) => {
  let low = 0;
  let high = items.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (items[middle]!.id < id) low = middle + 1;
    else high = middle;
  }
  return low; // the first item whose id is not below `id`
};

/**
 * Applies `edits` to `items` (the stored list, in order) as one new revision of the list. An item
 * whose JSON is unchanged, and a removal of an item that is not there, write nothing.
 *
 * `located` gives, for each edit's id, the index in `stored` of the first item whose id is not below
 * it (list-store.ts, readStoredAround): then only the items there need their id and JSON, and the rest
 * of `stored` only where it sits (the edits are applied in id order, so each index moves by what the
 * edits before it added and removed).
 */
export function editList(
  layout: ListLayout,
  stored: readonly StoredItem[],
  edits: Iterable<ListEdit>,
  located?: ReadonlyMap<number, number>,
): EditedList {
  const revision = layout.revision + 1;
  const items = [...stored];
  const writes: EditedList['writes'] = [];
  const replaced: string[] = [];
  const left: string[] = [];
  const came: string[] = [];
  let base = layout.base;
  let shift = 0; // items the edits so far added, less those they removed
  for (const { id, json } of [...edits].sort((a, b) => a.id - b.id)) {
    const at = located ? located.get(id)! + shift : byId(items, id);
    const found = items[at]?.id === id ? items[at] : undefined;
    if (found && found.json === json) continue;
    if (!found && json === null) continue;
    if (found) {
      replaced.push(found.key);
      left.push(found.json);
    }
    if (json === null) {
      items.splice(at, 1);
      shift -= 1;
      continue;
    }
    came.push(json);
    let item: StoredItem;
    if (found) {
      const key = found.inserted ? insertedItemKey(found.slot, id, revision) : baseItemKey(found.slot, revision);
      item = { ...found, json, key, revision };
      items[at] = item;
    } else if (at === items.length) {
      // After the last: the next slot of the generation, whose key nothing has used.
      base += 1;
      item = { id, json, key: baseItemKey(base), slot: base, inserted: false };
      items.push(item);
      shift += 1;
    } else {
      const slot = items[at - 1]?.slot ?? 0;
      item = { id, json, key: insertedItemKey(slot, id, revision), slot, inserted: true, revision };
      items.splice(at, 0, item);
      shift += 1;
    }
    writes.push({ id, key: item.key, json });
  }
  if (writes.length === 0 && replaced.length === 0) return { layout, writes, replaced, left, came, items };
  return {
    layout: { generation: layout.generation, count: items.length, base, revision, entries: overlayOf(base, items) },
    writes,
    replaced,
    left,
    came,
    items,
  };
}

/** The overlay a list's items make: the base slots gone or changed, and the items added between slots. */
function overlayOf(base: number, items: readonly StoredItem[]): OverlayEntry[] {
  const entries: OverlayEntry[] = [];
  const live = new Uint8Array(base + 1);
  for (const item of items) {
    if (item.inserted) entries.push({ slot: item.slot, kind: 'inserted', id: item.id, revision: item.revision! });
    else {
      live[item.slot] = 1;
      if (item.revision !== undefined) entries.push({ slot: item.slot, kind: 'changed', revision: item.revision });
    }
  }
  for (let slot = 1; slot <= base; slot++) if (!live[slot]) entries.push({ slot, kind: 'removed' });
  // Sorted by slot; at one slot the slot's own entry, then what was added after it, by id.
  return entries.sort(
    (a, b) =>
      a.slot - b.slot ||
      Number(a.kind === 'inserted') - Number(b.kind === 'inserted') ||
      (a.kind === 'inserted' && b.kind === 'inserted' ? a.id - b.id : 0),
  );
}

/** A dense new generation of the list: what a compaction or a list replaced whole writes. */
export function denseLayout(generation: string, count: number, revision: number): ListLayout {
  return { generation, count, base: count, revision, entries: [] };
}

/** Whether the list should be rewritten dense: its overlay has grown past its budget. */
export const needsCompaction = (layout: ListLayout) => overlayBytes(layout) > OVERLAY_COMPACT_BYTES;
