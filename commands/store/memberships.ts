import { paginateQuery, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { forEachConcurrently } from './concurrently.ts';
import { LEDGER_PARTITION, tokenKey, userTokenHashOf, userTokensQuery, type Key } from '../../shared/store/keys.ts';

/**
 * Memberships live on the token items, as `<team id>#<generation>` entries in a string set
 * (shared/store/keys.ts, membershipEntry). They are only ever added to or deleted from the set,
 * never written whole, so the entries of the generation readers use now are never disturbed
 * while an import adds the next generation's.
 */

/** The items of a partition (of a sort-key range of it), strongly consistent, a page at a time. */
export async function* queryPages(
  doc: DynamoDBDocumentClient,
  tableName: string,
  pk: string,
  { range, keysOnly }: { range?: { from: string; to: string }; keysOnly?: boolean } = {},
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

/** Ledger entries (commands/store/keys.ts) in a sort-key range. */
export function ledgerEntries(doc: DynamoDBDocumentClient, tableName: string, range: { from: string; to: string }) {
  return queryAll(doc, tableName, LEDGER_PARTITION, { range });
}

/** The hashes of a user's tokens, from the user's token index. */
export async function listUserTokens(
  doc: DynamoDBDocumentClient,
  tableName: string,
  userId: number,
): Promise<string[]> {
  const { pk, range } = userTokensQuery(userId);
  return (await queryAll(doc, tableName, pk, { range, keysOnly: true })).map(userTokenHashOf);
}

/** Adds or removes `entries` on every token of each user (`beforeWrite` may throw to stop: the import lock's check). */
export async function changeUsersMemberships(
  doc: DynamoDBDocumentClient,
  tableName: string,
  entriesByUser: Iterable<[number, string[]]>,
  change: 'ADD' | 'DELETE',
  beforeWrite: () => void,
  tokensOf = (userId: number) => listUserTokens(doc, tableName, userId),
): Promise<void> {
  await forEachConcurrently(entriesByUser, async ([userId, entries]) => {
    for (const hash of await tokensOf(userId)) {
      beforeWrite();
      await changeMemberships(doc, tableName, hash, change, entries);
    }
  });
}

/** Adds (ADD) or removes (DELETE) membership entries of a token; a token that does not exist is left alone. */
export async function changeMemberships(
  doc: DynamoDBDocumentClient,
  tableName: string,
  hash: string,
  change: 'ADD' | 'DELETE',
  entries: string[],
): Promise<void> {
  if (entries.length === 0) return;
  try {
    await doc.send(
      new UpdateCommand({
        TableName: tableName,
        Key: tokenKey(hash),
        UpdateExpression: `${change} memberships :entries`,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':entries': new Set(entries) },
      }),
    );
  } catch (error) {
    if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
  }
}
