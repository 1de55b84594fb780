import { GetCommand, QueryCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { hashToken, isExpired } from '../../shared/auth/token.ts';
import { generateToken } from './secret.ts';
import { getItems } from '../store/batch-get.ts';
import { tokenKey, userKey, userTokenKey } from '../../shared/store/keys.ts';

/** Token administration for the `token` command. Secrets are returned once and never stored. */

export interface NewToken {
  userId: number;
  abilities: string[];
  name: string;
  expiresAt: string | null;
}

export interface TokenSummary {
  /** The SHA-256 of the secret: safe to show, and enough to revoke a token whose secret is lost. */
  id: string;
  name: string;
  abilities: string[];
  createdAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  status: 'active' | 'expired' | 'revoked';
}

export class UnknownUser extends Error {
  constructor(userId: number) {
    super(`user ${userId} does not exist (import a snapshot that has them first)`);
    this.name = 'UnknownUser';
  }
}

export async function createToken(doc: DynamoDBDocumentClient, tableName: string, token: NewToken): Promise<string> {
  const user = await doc.send(new GetCommand({ TableName: tableName, Key: userKey(token.userId), ConsistentRead: true }));
  if (!user.Item) throw new UnknownUser(token.userId);
  const secret = generateToken();
  const hash = hashToken(secret);
  await doc.send(new TransactWriteCommand({
    TransactItems: [
      {
        Put: {
          TableName: tableName,
          Item: {
            ...tokenKey(hash), user_id: token.userId, name: token.name, abilities: token.abilities,
            expires_at: token.expiresAt, created_at: new Date().toISOString(),
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      { Put: { TableName: tableName, Item: userTokenKey(token.userId, hash) } },
    ],
  }));
  return secret;
}

/** Revokes by secret or by id (the hash `list` shows). Returns false when no such token exists. */
export async function revokeToken(doc: DynamoDBDocumentClient, tableName: string, by: { secret: string } | { id: string }): Promise<boolean> {
  const hash = 'secret' in by ? hashToken(by.secret) : by.id.toLowerCase();
  try {
    await doc.send(new UpdateCommand({
      TableName: tableName,
      Key: tokenKey(hash),
      UpdateExpression: 'SET revoked_at = if_not_exists(revoked_at, :now)',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':now': new Date().toISOString() },
    }));
    return true;
  } catch (error) {
    if ((error as Error).name === 'ConditionalCheckFailedException') return false;
    throw error;
  }
}

export async function listTokens(doc: DynamoDBDocumentClient, tableName: string, userId: number, now = new Date()): Promise<TokenSummary[]> {
  const hashes: string[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(new QueryCommand({
      TableName: tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': userKey(userId).pk, ':prefix': 'TOKEN#' },
      ExclusiveStartKey: startKey,
    }));
    for (const item of page.Items ?? []) hashes.push(String(item.sk).slice('TOKEN#'.length));
    startKey = page.LastEvaluatedKey;
  } while (startKey);

  const summaries: TokenSummary[] = [];
  for (const item of await getItems(doc, tableName, hashes.map(tokenKey))) {
    // A token re-imported for another user moves; list it only under its owner.
    if (Number(item.user_id) !== userId) continue;
    const revokedAt = (item.revoked_at as string | undefined) ?? null;
    const expiresAt = (item.expires_at as string | undefined) ?? null;
    summaries.push({
      id: String(item.pk).slice('TOKEN#'.length),
      name: String(item.name ?? ''),
      abilities: (item.abilities as string[]) ?? [],
      createdAt: (item.created_at as string | undefined) ?? null,
      expiresAt,
      revokedAt,
      status: revokedAt ? 'revoked' : isExpired(expiresAt, now) ? 'expired' : 'active',
    });
  }
  return summaries.sort((a, b) => (a.createdAt ?? '').localeCompare(b.createdAt ?? '') || a.id.localeCompare(b.id));
}

/** Whether the user exists (the token command reports an unknown user as an error). */
export async function userExists(doc: DynamoDBDocumentClient, tableName: string, userId: number): Promise<boolean> {
  const user = await doc.send(new GetCommand({ TableName: tableName, Key: userKey(userId), ConsistentRead: true }));
  return user.Item !== undefined;
}
