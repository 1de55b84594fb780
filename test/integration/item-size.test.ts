import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { daemonJson, projectJson } from '../../shared/domain/served-json.ts';
import { LIMITS } from '../../shared/domain/records.ts';
import { resourceItem } from '../../shared/write/items.ts';
import { insertedItemKey } from '../../shared/table/list-layout.ts';
import { DYNAMODB_ITEM_BYTES, itemSize } from '../../shared/write/item-size.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';

/**
 * The import checks every item against DynamoDB's 400 KB before its first write, with sizes
 * computed as DynamoDB computes them (shared/write/item-size.ts). DynamoDB Local enforces the
 * limit: an item the function sizes at exactly 400 KB is stored, one byte more is refused.
 */
let table: TestTable;
beforeAll(async () => {
  table = await freshTable();
});

const put = (item: Record<string, unknown>) =>
  table.doc.send(new PutCommand({ TableName: table.tableName, Item: item }));

/** An item of exactly `bytes` by itemSize: 3-byte characters, then single bytes to make up the rest. */
function itemOf(bytes: number): Record<string, unknown> {
  const base = { pk: 'SIZE#1', sk: 'x', n: 12345, s: new Set(['a#1', 'b#2']), j: '' };
  const room = bytes - itemSize(base);
  const wide = Math.floor(room / 3) - 10;
  const j = '€'.repeat(wide) + 'e'.repeat(room - wide * 3);
  const item = { ...base, j };
  expect(itemSize(item)).toBe(bytes);
  return item;
}

describe('item sizes in bytes, as DynamoDB counts them', () => {
  it('stores an item of exactly 400 KB', async () => {
    await expect(put(itemOf(DYNAMODB_ITEM_BYTES))).resolves.toBeDefined();
  });

  it('refuses an item of 400 KB and one byte', async () => {
    await expect(put(itemOf(DYNAMODB_ITEM_BYTES + 1))).rejects.toThrow(/size/i);
  });

  it('leaves every project and daemon item far below the limit, whatever the strings (so no record needs measuring)', () => {
    // The longest strings the format allows, of 4-byte characters (JSON keeps them as they are).
    const longest = (characters: number) => '😀'.repeat(characters);
    const id = Number.MAX_SAFE_INTEGER;
    const project = projectJson({
      id,
      name: longest(LIMITS.name),
      slug: longest(LIMITS.name),
      client_id: id,
      created_at: '2026-01-01T00:00:00+00:00',
    });
    const daemon = daemonJson({
      id,
      name: longest(LIMITS.name),
      command: longest(LIMITS.text),
      username: longest(LIMITS.name),
      directory: longest(LIMITS.text),
      processes: id,
      environment_id: id,
      server_id: id,
    });
    // The longest sort key a list's item can have: an item added after the last slot, at the last revision.
    const key = insertedItemKey(9_999_999_999, id, 36 ** 8 - 1);
    for (const json of [project, daemon]) {
      expect(itemSize(resourceItem(id, 'g'.repeat(16), 'daemons', key, json))).toBeLessThan(DYNAMODB_ITEM_BYTES / 4);
    }
  });
});
