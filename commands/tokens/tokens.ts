import { GetCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { hashToken, isExpired } from '../../shared/api/bearer.ts';
import { utcTime } from './expiry.ts';
import { generateToken } from './secret.ts';
import { fail } from '../cli/errors.ts';
import { escapeText } from '../cli/text.ts';
import { type Key, tokenHashOf, tokenKey, userKey, userTokenKey } from '../../shared/table/keys.ts';
import { listUserTokens, tagTokenMemberships } from '../../shared/write/memberships.ts';
import { getItems } from '../../shared/write/reads.ts';

/** Token administration for the `token` command. Secrets are returned once and never stored. */

/**
 * Issues a token (a user that does not exist is the command's failure): written active, then given
 * the membership entries of its user's teams (shared/write/memberships.ts, tagTokenMemberships),
 * which a writer that changes the user's memberships meanwhile can never leave wrong: it finds the
 * token when it lists the user's tokens, or the token finds its change (docs/contract.md, section 7).
 */
export async function createToken(
  doc: DynamoDBDocumentClient,
  tableName: string,
  token: { userId: number; abilities: string[]; name: string; expiresAt: string | null },
): Promise<string> {
  if (!(await userTeams(doc, tableName, token.userId))) {
    fail(
      `user ${token.userId} does not exist in table ${escapeText(tableName)} (import a snapshot that has them first)`,
    );
  }
  const secret = generateToken();
  const hash = hashToken(secret);
  await doc.send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Put: {
            TableName: tableName,
            Item: {
              ...tokenKey(hash),
              user_id: token.userId,
              name: token.name,
              abilities: token.abilities,
              expires_at: token.expiresAt,
              created_at: utcTime(new Date()),
            },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
        { Put: { TableName: tableName, Item: userTokenKey(token.userId, hash) } },
      ],
    }),
  );
  await tagTokenMemberships({ doc, tableName }, token.userId, hash);
  return secret;
}

/** The teams a user lists, or undefined when there is no such user. */
export async function userTeams(
  doc: DynamoDBDocumentClient,
  tableName: string,
  userId: number,
): Promise<number[] | undefined> {
  const user = await doc.send(new GetCommand({ TableName: tableName, Key: userKey(userId), ConsistentRead: true }));
  return user.Item && [...((user.Item.teams as Iterable<number> | undefined) ?? [])];
}

/**
 * Revokes by secret or by id (the hash `list` shows). Revoking a revoked token changes nothing: its
 * first revocation time stays, and is returned as `already`. Undefined when no such token exists.
 */
export async function revoke(
  doc: DynamoDBDocumentClient,
  tableName: string,
  by: { secret: string } | { id: string },
): Promise<{ already?: string } | undefined> {
  const hash = 'secret' in by ? hashToken(by.secret) : by.id.toLowerCase();
  try {
    const { Attributes } = await doc.send(
      new UpdateCommand({
        TableName: tableName,
        Key: tokenKey(hash),
        UpdateExpression: 'SET revoked_at = if_not_exists(revoked_at, :now)',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':now': utcTime(new Date()) },
        ReturnValues: 'UPDATED_OLD',
      }),
    );
    const before = Attributes?.revoked_at as string | undefined;
    return before ? { already: utcTime(before) } : {};
  } catch (error) {
    if ((error as Error).name === 'ConditionalCheckFailedException') return undefined;
    throw error;
  }
}

/** A user's tokens, oldest first, as `token list` shows them: never a secret. */
export async function listTokens(doc: DynamoDBDocumentClient, tableName: string, userId: number) {
  const now = new Date();
  const items = await getItems(doc, tableName, (await listUserTokens({ doc, tableName }, userId)).map(tokenKey));
  // Tokens never move to another user (an import refuses that); checked all the same.
  return items
    .filter((item) => Number(item.user_id) === userId)
    .map((item) => {
      const revokedAt = (item.revoked_at as string | undefined) ?? null;
      const expiresAt = (item.expires_at as string | undefined) ?? null;
      return {
        /** The SHA-256 of the secret: safe to show, and enough to revoke a token whose secret is lost. */
        id: tokenHashOf(item as unknown as Key),
        /** The Laravel Sanctum id of a migrated token (its clients send `<id>|<secret>`), else null. */
        sanctumId: (item.sanctum_id as number | undefined) ?? null,
        name: String(item.name ?? ''),
        abilities: (item.abilities as string[]) ?? [],
        createdAt: item.created_at ? utcTime(item.created_at as string) : null,
        expiresAt: expiresAt && utcTime(expiresAt),
        revokedAt: revokedAt && utcTime(revokedAt),
        // inactive: written by an import that has not finished (not valid until it does).
        status: revokedAt
          ? 'revoked'
          : isExpired(expiresAt, now)
            ? 'expired'
            : item.inactive === true
              ? 'inactive'
              : 'active',
      };
    })
    .sort((a, b) => (a.createdAt ?? '').localeCompare(b.createdAt ?? '') || a.id.localeCompare(b.id));
}
