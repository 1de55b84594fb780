import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  allPlacedItems,
  baseItemKey,
  decodeOverlay,
  encodeOverlay,
  insertedItemKey,
  type ListLayout,
  placedItems,
} from '../../shared/table/list-layout.ts';
import { denseLayout, editList, type ListEdit, type StoredItem } from '../../shared/write/list-edits.ts';
import { propertyParameters, replayHint } from '../support/fuzz.ts';

/**
 * The list layout (docs/storage.md, "Lists that change by the item"): whatever sequence of changes a
 * list goes through, the keys the head names for any page are exactly the keys of the items at those
 * positions, in id order; and the head's overlay reads back as it was written.
 */
const FILE = 'test/unit/list-layout.test.ts';

/** A list written dense: ids given, at slots 1..n. */
function dense(ids: number[], generation = 'g'): { layout: ListLayout; items: StoredItem[] } {
  const items = ids.map((id, i) => ({
    id,
    json: `{"id":${id},"v":0}`,
    key: baseItemKey(i + 1),
    slot: i + 1,
    inserted: false,
  }));
  return { layout: denseLayout(generation, ids.length, 1), items };
}

/** What the table would hold: every key written, with its JSON. */
function apply(state: { layout: ListLayout; items: StoredItem[]; table: Map<string, string> }, edits: ListEdit[]) {
  const edited = editList(state.layout, state.items, edits);
  for (const write of edited.writes) {
    // A key is never written twice with other content: an old reader may still read it.
    const before = state.table.get(write.key);
    expect(before === undefined || before === write.json, `key ${write.key} rewritten`).toBe(true);
    state.table.set(write.key, write.json);
  }
  state.layout = edited.layout;
  state.items = edited.items;
  return edited;
}

describe('a page of a list', () => {
  it('is the base slots of a dense list', () => {
    const { layout } = dense([10, 20, 30, 40, 50]);
    expect(placedItems(layout, 2, 4).map((p) => p.key)).toEqual([2, 3, 4].map((s) => baseItemKey(s)));
    expect(placedItems(layout, 5, 9).map((p) => p.position)).toEqual([5]);
    expect(placedItems(layout, 6, 9)).toEqual([]);
  });

  it('skips a removed slot, takes a changed version, and puts an added item after the slot before it', () => {
    const start = dense([10, 20, 30, 40]);
    const table = new Map(start.items.map((item) => [item.key, item.json]));
    const state = { ...start, table };
    apply(state, [
      { id: 20, json: null },
      { id: 30, json: '{"id":30,"v":1}' },
      { id: 35, json: '{"id":35,"v":0}' },
      { id: 5, json: '{"id":5,"v":0}' },
      { id: 60, json: '{"id":60,"v":0}' },
    ]);
    const keys = allPlacedItems(state.layout).map((p) => p.key);
    expect(keys).toEqual([
      insertedItemKey(0, 5, 2),
      baseItemKey(1),
      baseItemKey(3, 2),
      insertedItemKey(3, 35, 2),
      baseItemKey(4),
      baseItemKey(5),
    ]);
    expect(state.layout.count).toBe(6);
    expect(state.layout.base).toBe(5);
    // Sort keys keep the list's order.
    expect([...keys].sort()).toEqual(keys);
  });

  it('reads the overlay back as it was written', () => {
    const { layout } = dense([1, 2, 3, 4, 5, 6]);
    const edited = editList(layout, dense([1, 2, 3, 4, 5, 6]).items, [
      { id: 2, json: null },
      { id: 4, json: '{"id":4}' },
      { id: 9_007_199_254_740_991, json: '{"big":1}' },
      { id: 3_000, json: null },
      { id: 3, json: null },
      { id: 1, json: '{"id":1,"x":2}' },
    ]);
    expect(decodeOverlay(encodeOverlay(edited.layout), edited.layout.revision)).toEqual(edited.layout.entries);
  });
});

describe('any sequence of changes', () => {
  const change = fc.oneof(
    fc.record({ id: fc.integer({ min: 1, max: 400 }), json: fc.constant(null) }),
    fc.record({ id: fc.integer({ min: 1, max: 400 }), json: fc.string({ maxLength: 3 }) }),
  );
  const scenario = fc.record({
    ids: fc.uniqueArray(fc.integer({ min: 1, max: 400 }), { maxLength: 60 }),
    batches: fc.array(fc.array(change, { maxLength: 6 }), { maxLength: 12 }),
    first: fc.integer({ min: 1, max: 80 }),
    length: fc.integer({ min: 1, max: 50 }),
  });

  it('names, for every page, exactly the keys of the items at those positions, in id order', () => {
    fc.assert(
      fc.property(scenario, ({ ids, batches, first, length }) => {
        const start = dense([...ids].sort((a, b) => a - b));
        const state = { ...start, table: new Map(start.items.map((item) => [item.key, item.json])) };
        const model = new Map(start.items.map((item) => [item.id, item.json]));
        for (const batch of batches) {
          // Within a batch, the last word on an id counts.
          const last = new Map(batch.map((edit) => [edit.id, edit]));
          apply(
            state,
            [...last.values()].map((edit) => ({
              id: edit.id,
              json: edit.json === null ? null : `{"id":${edit.id},"s":${JSON.stringify(edit.json)}}`,
            })),
          );
          for (const edit of last.values()) {
            if (edit.json === null) model.delete(edit.id);
            else model.set(edit.id, `{"id":${edit.id},"s":${JSON.stringify(edit.json)}}`);
          }
          const expected = [...model.entries()].sort(([a], [b]) => a - b);
          expect(state.layout.count).toBe(expected.length);
          // The whole list, read through the head's keys.
          const placed = allPlacedItems(state.layout);
          expect(placed.map((p) => state.table.get(p.key))).toEqual(expected.map(([, json]) => json));
          // Sort keys in list order: a page is one key range, holding no other live item.
          const keys = placed.map((p) => p.key);
          expect([...keys].sort()).toEqual(keys);
          // One page, anywhere.
          const page = placedItems(state.layout, first, first + length - 1);
          expect(page.map((p) => state.table.get(p.key))).toEqual(
            expected.slice(first - 1, first - 1 + length).map(([, json]) => json),
          );
          expect(decodeOverlay(encodeOverlay(state.layout), state.layout.revision)).toEqual(state.layout.entries);
        }
      }),
      propertyParameters(300),
    );
    console.info(replayHint(FILE));
  });
});
