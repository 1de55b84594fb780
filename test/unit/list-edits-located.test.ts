import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { baseItemKey } from '../../shared/table/list-layout.ts';
import { denseLayout, editList, type ListEdit, type StoredItem } from '../../shared/write/list-edits.ts';
import { propertyParameters, replayHint } from '../support/fuzz.ts';

/**
 * A change of a few items of a long list reads only the items around them
 * (shared/write/list-store.ts, readStoredAround), so editList is given where each edit's id is or
 * would go, and a list whose other items have only their place (no id, no JSON). Whatever the list
 * and the changes, it must change the list exactly as it does with every item known.
 */
const FILE = 'test/unit/list-edits-located.test.ts';

const json = (id: number, v: string) => `{"id":${id},"v":${JSON.stringify(v)}}`;

/** The first index whose id is not below `id`. */
const lowerBound = (items: readonly StoredItem[], id: number) => {
  const at = items.findIndex((item) => item.id >= id);
  return at === -1 ? items.length : at;
};

/** What readStoredAround hands editList: only the items at the edits' places known whole. */
function sparse(items: readonly StoredItem[], edits: readonly ListEdit[]) {
  const located = new Map(edits.map((edit) => [edit.id, lowerBound(items, edit.id)]));
  const known = new Set(located.values());
  const stored = items.map((item, i) =>
    known.has(i) || item.inserted
      ? { ...item, json: known.has(i) ? item.json : '' }
      : { ...item, id: Number.NaN, json: '' },
  );
  return { stored, located };
}

describe('a change given where its items are', () => {
  const edit = fc.record({
    id: fc.integer({ min: 1, max: 300 }),
    json: fc.option(fc.string({ maxLength: 2 }), { nil: null }),
  });
  const scenario = fc.record({
    ids: fc.uniqueArray(fc.integer({ min: 1, max: 300 }), { maxLength: 80 }),
    batches: fc.array(fc.uniqueArray(edit, { selector: (e) => e.id, maxLength: 8 }), { minLength: 1, maxLength: 10 }),
  });

  it('changes the list exactly as it does with every item read', () => {
    fc.assert(
      fc.property(scenario, ({ ids, batches }) => {
        const sorted = [...ids].sort((a, b) => a - b);
        let layout = denseLayout('g', sorted.length, 1);
        let items: StoredItem[] = sorted.map((id, i) => ({
          id,
          json: json(id, ''),
          key: baseItemKey(i + 1),
          slot: i + 1,
          inserted: false,
        }));
        for (const batch of batches) {
          const edits = batch.map((e) => ({ id: e.id, json: e.json === null ? null : json(e.id, e.json) }));
          const whole = editList(layout, items, edits);
          const { stored, located } = sparse(items, edits);
          const around = editList(layout, stored, edits, located);
          expect(around.layout).toEqual(whole.layout);
          expect(around.writes).toEqual(whole.writes);
          expect(around.replaced).toEqual(whole.replaced);
          expect(around.left).toEqual(whole.left);
          expect(around.came).toEqual(whole.came);
          expect(around.items.map((item) => item.key)).toEqual(whole.items.map((item) => item.key));
          layout = whole.layout;
          items = whole.items;
        }
      }),
      propertyParameters(300),
    );
    console.info(replayHint(FILE));
  });
});
