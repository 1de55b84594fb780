import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Key } from '../../shared/store/keys.ts';

const BATCH_LIMIT = 100; // BatchGetItem's limit
const MAX_ROUNDS = 10;

/**
 * Reads items by key, 100 keys a call, for the command-line tools. Keys DynamoDB leaves
 * unprocessed (its answer under load) are asked again with backoff and jitter; none is dropped.
 * (The API's own reads, two keys on the hot path, are in team-reader.ts.)
 */
export async function getItems(
  doc: DynamoDBDocumentClient,
  tableName: string,
  keys: Key[],
  options: { consistent?: boolean } = {},
): Promise<Record<string, unknown>[]> {
  const unique = [...new Map(keys.map((k) => [`${k.pk}\u0000${k.sk}`, k])).values()];
  const items: Record<string, unknown>[] = [];
  for (let i = 0; i < unique.length; i += BATCH_LIMIT) {
    let pending: Key[] = unique.slice(i, i + BATCH_LIMIT);
    for (let round = 0; pending.length > 0; round++) {
      if (round >= MAX_ROUNDS) throw new Error(`BatchGetItem left ${pending.length} keys unprocessed after ${MAX_ROUNDS} tries`);
      if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50 * 2 ** round, 2_000)));
      const result = await doc.send(new BatchGetCommand({ RequestItems: { [tableName]: { Keys: pending, ConsistentRead: options.consistent } } }));
      items.push(...(result.Responses?.[tableName] ?? []));
      pending = (result.UnprocessedKeys?.[tableName]?.Keys as Key[] | undefined) ?? [];
    }
  }
  return items;
}
