import { paginateQuery, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { tokenKey, userTokenHashOf, userTokensQuery, type Key } from './keys.ts';

/**
 * Memberships live on the token items, as `<team id>#<generation>` entries in a string set
 * (shared/store/keys.ts, membershipEntry). They are only ever added to or deleted from the set,
 * never written whole, so the entries of the generation readers use now are never disturbed
 * while an import adds the next generation's.
 */

/** The hashes of a user's tokens, from the user's token index (strongly consistent). */
export async function listUserTokens(doc: DynamoDBDocumentClient, tableName: string, userId: number): Promise<string[]> {
  const { pk, skPrefix } = userTokensQuery(userId);
  const hashes: string[] = [];
  const pages = paginateQuery({ client: doc }, {
    TableName: tableName,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': pk, ':prefix': skPrefix },
    ProjectionExpression: 'pk, sk',
    ConsistentRead: true,
  });
  for await (const page of pages) for (const item of page.Items ?? []) hashes.push(userTokenHashOf(item as Key));
  return hashes;
}

/** Adds membership entries to a token (a token that does not exist is left alone). */
export async function addMemberships(doc: DynamoDBDocumentClient, tableName: string, hash: string, entries: string[]): Promise<void> {
  if (entries.length === 0) return;
  await updateExisting(doc, tableName, hash, 'ADD memberships :entries', entries);
}

/** Deletes membership entries from a token (DynamoDB drops the attribute when the set empties). */
export async function removeMemberships(doc: DynamoDBDocumentClient, tableName: string, hash: string, entries: string[]): Promise<void> {
  if (entries.length === 0) return;
  await updateExisting(doc, tableName, hash, 'DELETE memberships :entries', entries);
}

async function updateExisting(doc: DynamoDBDocumentClient, tableName: string, hash: string, expression: string, entries: string[]): Promise<void> {
  try {
    await doc.send(new UpdateCommand({
      TableName: tableName,
      Key: tokenKey(hash),
      UpdateExpression: expression,
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':entries': new Set(entries) },
    }));
  } catch (error) {
    if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
  }
}
