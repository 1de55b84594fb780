import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Key } from '../../shared/store/keys.ts';
import { untilProcessed } from '../../shared/store/retry.ts';

const BATCH_LIMIT = 100; // BatchGetItem's limit

/**
 * Reads items by key, 100 keys a call, for the command-line tools. Keys DynamoDB leaves
 * unprocessed are asked again under the one retry policy (shared/store/retry.ts); none is dropped.
 * (The API's own reads, two keys on the hot path, are in shared/store/team-reader.ts.)
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
    await untilProcessed(
      'BatchGetItem',
      unique.slice(i, i + BATCH_LIMIT),
      async (pending) => {
        const result = await doc.send(
          new BatchGetCommand({ RequestItems: { [tableName]: { Keys: pending, ConsistentRead: options.consistent } } }),
        );
        items.push(...(result.Responses?.[tableName] ?? []));
        return (result.UnprocessedKeys?.[tableName]?.Keys as Key[] | undefined) ?? [];
      },
      { retries: 10 },
    );
  }
  return items;
}
