/**
 * Where a list's items are (docs/storage.md, "Lists that change by the item, at any size"): the one
 * mapping from a position in a team's projects or daemons (1 to count, in id order) to the sort key of
 * the item that holds it, read by the API for every page and by the writers for every change.
 *
 * A generation starts dense: its items at slots 1 to `base`, in id order, each at the key of its slot.
 * From then on a change writes only what it changes, and the list's head (one small item, read with
 * the token) records the rest in an overlay:
 *
 * - an item changed gets a new version at `<slot>#<revision>`; the old one stays for the readers that
 *   still hold the old head, and is swept once it has been replaced for five minutes;
 * - an item removed leaves its slot (the overlay says the slot is gone);
 * - an item added after the last takes the next slot (`base` grows: nothing to record);
 * - an item added anywhere else is put after the slot of the item before it, at
 *   `<slot>+<id>#<revision>` (sort keys keep id order there too).
 *
 * So the keys of any page follow from the head alone: one Query reads them, at any depth, plus only
 * the replaced versions of the last five minutes that lie between them. A reader keeps exactly the
 * keys the head names, and a page that lacks one is read again strongly consistent (an eventually
 * consistent Query may miss a version written just before the head switched to it). When the overlay
 * grows past its budget the list is rewritten dense as a new generation, beside the one readers use.
 */

/** A base slot removed, or changed (its item's version is at that list revision), or an item added after it. */
export type OverlayEntry =
  | { slot: number; kind: 'removed' }
  | { slot: number; kind: 'changed'; revision: number }
  | { slot: number; kind: 'inserted'; id: number; revision: number };

/** One list of a team as its head describes it. */
export interface ListLayout {
  /** The generation: its items are in their own partition (shared/table/keys.ts). */
  generation: string;
  /** Items in the list. */
  count: number;
  /** Slots 1 to base exist (some may be removed); an item added after the last takes base + 1. */
  base: number;
  /** Grows with every change of the list; a changed or added item's key names the revision that wrote it. */
  revision: number;
  /** Sorted by slot; at one slot the base slot's own entry first, then the items added after it by id. */
  entries: readonly OverlayEntry[];
}

const SLOT_DIGITS = 10;
const ID_DIGITS = 16;
const REVISION_DIGITS = 8;
const slotKey = (slot: number) => String(slot).padStart(SLOT_DIGITS, '0');
const revisionSuffix = (revision: number) => `#${revision.toString(36).padStart(REVISION_DIGITS, '0')}`;

/** The sort key of a base slot's item, at its first version (revision undefined) or a later one. */
export const baseItemKey = (slot: number, revision?: number) =>
  revision === undefined ? slotKey(slot) : `${slotKey(slot)}${revisionSuffix(revision)}`;

/** The sort key of an item added after a slot. '#' sorts before '+', so a slot's versions come before them. */
export const insertedItemKey = (slot: number, id: number, revision: number) =>
  `${slotKey(slot)}+${String(id).padStart(ID_DIGITS, '0')}${revisionSuffix(revision)}`;

/** One live item of the list: its position, the key of its current version, and where it sits. */
export interface PlacedItem {
  position: number;
  key: string;
  /** The base slot it holds, or the slot it was added after. */
  slot: number;
  /** For an item added after `slot`: its id (a base slot's id is in its item). */
  insertedId?: number;
  /** The list revision that wrote this version; undefined for a base slot's first version. */
  revision?: number;
}

/**
 * The live items from position `first` to `last` (inclusive, 1-based), in order: what a page reads.
 * Runs of untouched slots are skipped arithmetically, so the cost is the overlay's size plus the page's.
 */
export function placedItems(layout: ListLayout, first: number, last: number): PlacedItem[] {
  const placed: PlacedItem[] = [];
  let position = 0; // live items met so far
  let slot = 0; // every slot up to this one has been met
  const done = () => position >= last;
  const take = (item: Omit<PlacedItem, 'position'>) => {
    position += 1;
    if (position >= first) placed.push({ position, ...item });
  };
  /** The untouched slots after `slot`, up to `until`: those before the page are counted, not listed. */
  const untouched = (until: number) => {
    if (until <= slot) return;
    const skipped = Math.min(until - slot, Math.max(0, first - 1 - position));
    position += skipped;
    for (let s = slot + skipped + 1; s <= until && !done(); s++) take({ key: baseItemKey(s), slot: s });
    slot = until;
  };
  const { entries } = layout;
  let i = 0;
  while (i < entries.length && !done()) {
    const at = entries[i]!.slot;
    untouched(at - 1);
    if (done()) break;
    const own = entries[i]!.kind === 'inserted' ? undefined : entries[i++];
    // The base slot itself (slot 0 holds no item: only what was added before slot 1).
    if (at >= 1 && at > slot) {
      if (!own) take({ key: baseItemKey(at), slot: at });
      else if (own.kind === 'changed') take({ key: baseItemKey(at, own.revision), slot: at, revision: own.revision });
    }
    slot = Math.max(slot, at);
    for (; i < entries.length && entries[i]!.slot === at && !done(); i++) {
      const entry = entries[i] as Extract<OverlayEntry, { kind: 'inserted' }>;
      take({
        key: insertedItemKey(at, entry.id, entry.revision),
        slot: at,
        insertedId: entry.id,
        revision: entry.revision,
      });
    }
  }
  if (!done()) untouched(layout.base);
  return placed;
}

/** Every live item, in order: what a writer compares a whole list with. */
export const allPlacedItems = (layout: ListLayout) => placedItems(layout, 1, layout.count);

// ---- The overlay as the head stores it ------------------------------------------------------------

/**
 * The overlay in bytes (a Binary attribute of the head; DynamoDB counts its raw bytes): per entry a
 * varint of (slot distance from the previous entry × 4 + kind), then, for a changed slot, the
 * revision's distance below the head's; for an added item, its id's distance from the previous added
 * item's (ids grow along the list) and the revision's distance. A removed slot costs one or two bytes.
 */
export function encodeOverlay(layout: Pick<ListLayout, 'revision' | 'entries'>): Uint8Array {
  const bytes: number[] = [];
  const varint = (value: number) => {
    let rest = value;
    while (rest >= 0x80) {
      bytes.push((rest % 0x80) | 0x80);
      rest = Math.floor(rest / 0x80);
    }
    bytes.push(rest);
  };
  let slot = 0;
  let id = 0;
  for (const entry of layout.entries) {
    const kind = entry.kind === 'removed' ? 0 : entry.kind === 'changed' ? 1 : 2;
    varint((entry.slot - slot) * 4 + kind);
    slot = entry.slot;
    if (entry.kind === 'inserted') {
      varint(entry.id - id);
      id = entry.id;
    }
    if (entry.kind !== 'removed') varint(layout.revision - entry.revision);
  }
  return Uint8Array.from(bytes);
}

export function decodeOverlay(bytes: Uint8Array | undefined, revision: number): OverlayEntry[] {
  const entries: OverlayEntry[] = [];
  if (!bytes) return entries;
  let at = 0;
  const varint = () => {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = bytes[at++];
      if (byte === undefined) throw new Error('the overlay ends in the middle of an entry');
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 0x80;
    }
  };
  let slot = 0;
  let id = 0;
  while (at < bytes.length) {
    const head = varint();
    slot += Math.floor(head / 4);
    const kind = head % 4;
    if (kind === 0) entries.push({ slot, kind: 'removed' });
    else if (kind === 1) entries.push({ slot, kind: 'changed', revision: revision - varint() });
    else {
      id += varint();
      entries.push({ slot, kind: 'inserted', id, revision: revision - varint() });
    }
  }
  return entries;
}

/** The overlay's size in the head, in bytes. */
export const overlayBytes = (layout: Pick<ListLayout, 'revision' | 'entries'>) => encodeOverlay(layout).length;
