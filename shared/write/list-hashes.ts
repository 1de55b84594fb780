import { generationPartition, type ListResource, listHashesKey, listHashesPartition } from '../table/keys.ts';
import { allPlacedItems } from '../table/list-layout.ts';
import { itemHash } from './desired.ts';
import type { ListPart } from './items.ts';
import type { StoredItem } from './list-edits.ts';
import { idOf, notHeld, readStoredList, storedItem } from './list-store.ts';
import { readItems, queryPages } from './reads.ts';
import type { WriteRequest } from './batch-write.ts';
import { deleteRequest, putRequest, type TableRef } from './writer.ts';

/**
 * What a list given whole is compared with, without reading the list (docs/storage.md, "Lists that
 * change by the item, at any size"). A list of 100,000 items is 20 MB: read whole, strongly
 * consistent, it is 5,000 read units, at least 1.7 s at one partition key's 3,000 a second, and far
 * longer on DynamoDB Local. Yet a diff needs only each item's id and hash (shared/write/desired.ts,
 * itemHash). So a generation written dense (a list written whole, a compaction) is written with its
 * base slots' ids and hashes beside it, HASHES_PER_PAGE slots an item (16 bytes a slot: 16 KB, 4 read
 * units strongly consistent; 400 for 100,000 items). Those items never change: a base slot's first
 * version is never rewritten. What changed since (the head's overlay: a slot changed, an item added
 * between slots; and the slots added after the last, which the overlay does not record) is read by its
 * key, at most a few thousand items before the overlay makes the list compact.
 */

/** Slots of a generation per item of hashes. */
const HASHES_PER_PAGE = 1_000;
/** Bytes a slot takes: its id (a float64: ids reach 2^53) and its item's hash (a uint64), big-endian. */
const SLOT_BYTES = 16;
/** Past this many items to read by key, a Query of the whole list costs less (and a BatchGetItem asks 100). */
const READ_BY_KEY_AT_MOST = 2_000;

/**
 * The items of hashes of a generation written dense: the item at slot `i + 1` has `ids[i]` and
 * `hashes[i]`. Each item also says how many slots the generation was written with.
 */
export function listHashRequests(
  teamId: number,
  generation: string,
  list: ListResource,
  ids: ArrayLike<number>,
  hashes: ArrayLike<bigint>,
): WriteRequest[] {
  const requests: WriteRequest[] = [];
  for (let first = 0, page = 0; first < ids.length; first += HASHES_PER_PAGE, page++) {
    const slots = Math.min(HASHES_PER_PAGE, ids.length - first);
    const bytes = Buffer.alloc(slots * SLOT_BYTES);
    for (let i = 0; i < slots; i++) {
      bytes.writeDoubleBE(ids[first + i]!, i * SLOT_BYTES);
      bytes.writeBigUInt64BE(hashes[first + i]!, i * SLOT_BYTES + 8);
    }
    const key = listHashesKey(teamId, generation, list, page);
    requests.push(putRequest({ ...key, slots: ids.length, h: new Uint8Array(bytes) }));
  }
  return requests;
}

/** The deletions of a generation's items of hashes (a generation swept goes whole). */
export async function listHashDeletions(table: TableRef, teamId: number, generation: string, list: ListResource) {
  const requests: WriteRequest[] = [];
  const partition = listHashesPartition(teamId, generation, list);
  for await (const page of queryPages(table.doc, table.tableName, partition, { keysOnly: true })) {
    requests.push(...page.map(deleteRequest));
  }
  return requests;
}

/**
 * The list as stored, for a diff with a list given whole: each item's id, key and slot, and its hash
 * (its JSON is not read where the hash is known). From the generation's items of hashes and the items
 * changed since, read by key; the whole list, read whole, where the generation has no hashes (written
 * before they were kept) or too much has changed since.
 */
export async function readStoredHashes(
  table: TableRef,
  teamId: number,
  list: ListResource,
  part: ListPart,
): Promise<StoredItem[]> {
  const { layout } = part;
  if (layout.count === 0) return [];
  const placed = allPlacedItems(layout);
  const pageCount = Math.ceil(layout.base / HASHES_PER_PAGE);
  const pages = await readItems(
    table,
    Array.from({ length: pageCount }, (_, page) => listHashesKey(teamId, layout.generation, list, page)),
  );
  const written = Number(pages[0]?.slots ?? 0);
  const bytes = new Map(pages.map((page) => [Number(page.sk), Buffer.from(page.h as Uint8Array)]));
  const complete = written > 0 && pages.length === Math.ceil(written / HASHES_PER_PAGE);
  const known = (item: (typeof placed)[number]) =>
    complete && item.insertedId === undefined && item.revision === undefined && item.slot <= written;
  const unknown = placed.filter((item) => !known(item));
  if (!complete || unknown.length > READ_BY_KEY_AT_MOST) return readStoredList(table, teamId, list, part);
  const partition = generationPartition(teamId, layout.generation, list);
  const keys = unknown.map((item) => ({ pk: partition, sk: item.key }));
  const read = await readItems(table, keys);
  const jsonOf = new Map(read.map((item) => [String(item.sk), String(item.j)]));
  return placed.map((item): StoredItem => {
    if (known(item)) {
      const page = bytes.get(Math.floor((item.slot - 1) / HASHES_PER_PAGE))!;
      const at = ((item.slot - 1) % HASHES_PER_PAGE) * SLOT_BYTES;
      return { ...storedItem(item, page.readDoubleBE(at), ''), hash: page.readBigUInt64BE(at + 8) };
    }
    const json = jsonOf.get(item.key);
    if (json === undefined) throw notHeld(teamId, list, item.key);
    return { ...storedItem(item, item.insertedId ?? idOf(json), json), hash: itemHash(json) };
  });
}
