import { BatchGetCommand, type DynamoDBDocumentClient, paginateQuery } from '@aws-sdk/lib-dynamodb';
import type { Key } from '../table/keys.ts';
import { untilProcessed, WRITER_RETRIES } from '../table/retry.ts';
import type { TableRef } from './writer.ts';

const BATCH_LIMIT = 100; // BatchGetItem's limit

/**
 * Reads items by key, 100 keys a call, for the writers. Keys DynamoDB leaves
 * unprocessed are asked again under the one retry policy (shared/table/retry.ts); none is dropped.
 * (The API's own reads, two keys on the hot path, are in shared/api/team-reader.ts.)
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
      WRITER_RETRIES,
    );
  }
  return items;
}

/** A writer's read by key: strongly consistent. */
export const readItems = (table: TableRef, keys: Key[]) =>
  getItems(table.doc, table.tableName, keys, { consistent: true });

/** A sort-key range: from and to, inclusive. */
interface SortRange {
  from: string;
  to: string;
}

/** The items of a partition (of a sort-key range of it), strongly consistent, a page at a time. */
export async function* queryPages(
  doc: DynamoDBDocumentClient,
  tableName: string,
  pk: string,
  { range, keysOnly }: { range?: SortRange; keysOnly?: boolean } = {},
) {
  const pages = paginateQuery(
    { client: doc },
    {
      TableName: tableName,
      KeyConditionExpression: range ? 'pk = :pk AND sk BETWEEN :from AND :to' : 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk, ...(range && { ':from': range.from, ':to': range.to }) },
      ProjectionExpression: keysOnly ? 'pk, sk' : undefined,
      ConsistentRead: true,
    },
  );
  for await (const page of pages) yield (page.Items ?? []) as (Key & Record<string, unknown>)[];
}

/** Every item of a partition (of a sort-key range of it), strongly consistent. */
export async function queryAll(...query: Parameters<typeof queryPages>) {
  const items: (Key & Record<string, unknown>)[] = [];
  for await (const page of queryPages(...query)) items.push(...page);
  return items;
}
