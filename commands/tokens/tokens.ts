import { GetCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { hashToken, isExpired } from '../../shared/auth/token.ts';
import { generateToken } from './secret.ts';
import { getItems } from '../store/batch-get.ts';
import { addMemberships, listUserTokens } from '../store/memberships.ts';
import { memberKey, membershipEntry, teamHeadKey, tokenHashOf, tokenKey, userKey, userTokenKey, type Key } from '../../shared/store/keys.ts';

/** Token administration for the `token` command. Secrets are returned once and never stored. */

export interface NewToken {
  userId: number;
  abilities: string[];
  name: string;
  expiresAt: string | null;
}

/** What `list` says of a token, in its status column (as wide as the longest). */
export const TOKEN_STATUSES = ['active', 'inactive', 'expired', 'revoked'] as const;

export interface TokenSummary {
  /** The SHA-256 of the secret: safe to show, and enough to revoke a token whose secret is lost. */
  id: string;
  /** The Laravel Sanctum id of a migrated token (its clients send `<id>|<secret>`), else null. */
  sanctumId: number | null;
  name: string;
  abilities: string[];
  createdAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  /** inactive: written by an import that has not finished (not valid until it does). */
  status: (typeof TOKEN_STATUSES)[number];
}

export class UnknownUser extends Error {
  constructor(userId: number) {
    super(`user ${userId} does not exist (import a snapshot that has them first)`);
    this.name = 'UnknownUser';
  }
}

/**
 * Issues a token: written active, then given the membership entries of the user's teams (a token
 * carries its memberships: shared/store/keys.ts). For each team the user lists, the current
 * generation's entry is added when that generation's member index holds the user; the heads are
 * read again, and if one moved meanwhile (an import switched it), the new generation's entry is
 * added too. An import running meanwhile lists the user's tokens again after its last switch, so
 * either way the token ends up with the entries of the generations readers use.
 */
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
  await tagMemberships(doc, tableName, token.userId, (user.Item.teams as number[] | undefined) ?? [], hash);
  return secret;
}

async function tagMemberships(doc: DynamoDBDocumentClient, tableName: string, userId: number, teamIds: number[], hash: string): Promise<void> {
  const tagged = new Set<string>();
  const generations = async () =>
    new Map((await getItems(doc, tableName, teamIds.map((id) => teamHeadKey(id)), { consistent: true })).map((head) => [Number(head.team_id), String(head.generation)]));
  let current = await generations();
  for (let round = 0; round < 5; round++) {
    const candidates = [...current].filter(([teamId, generation]) => !tagged.has(membershipEntry(teamId, generation)));
    const members = await getItems(doc, tableName, candidates.map(([teamId, generation]) => memberKey(teamId, generation, userId)), { consistent: true });
    const memberOf = new Set(members.map((item) => String((item as unknown as Key).pk)));
    const entries = candidates
      .filter(([teamId, generation]) => memberOf.has(memberKey(teamId, generation, userId).pk))
      .map(([teamId, generation]) => membershipEntry(teamId, generation));
    await addMemberships(doc, tableName, hash, entries);
    for (const [teamId, generation] of candidates) tagged.add(membershipEntry(teamId, generation));
    const again = await generations();
    if ([...again].every(([teamId, generation]) => current.get(teamId) === generation)) return;
    current = again;
  }
}

/** The hashes of a user's tokens migrated with this Sanctum id (more than one only if imports gave the id twice). */
export async function sanctumTokenHashes(doc: DynamoDBDocumentClient, tableName: string, userId: number, sanctumId: number): Promise<string[]> {
  return (await listTokens(doc, tableName, userId)).filter((token) => token.sanctumId === sanctumId).map((token) => token.id);
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
  const hashes = await listUserTokens(doc, tableName, userId);

  const summaries: TokenSummary[] = [];
  for (const item of await getItems(doc, tableName, hashes.map(tokenKey))) {
    // Tokens never move to another user (an import refuses that); checked all the same.
    if (Number(item.user_id) !== userId) continue;
    const revokedAt = (item.revoked_at as string | undefined) ?? null;
    const expiresAt = (item.expires_at as string | undefined) ?? null;
    summaries.push({
      id: tokenHashOf(item as unknown as Key),
      sanctumId: (item.sanctum_id as number | undefined) ?? null,
      name: String(item.name ?? ''),
      abilities: (item.abilities as string[]) ?? [],
      createdAt: (item.created_at as string | undefined) ?? null,
      expiresAt,
      revokedAt,
      status: revokedAt ? 'revoked' : isExpired(expiresAt, now) ? 'expired' : item.inactive === true ? 'inactive' : 'active',
    });
  }
  return summaries.sort((a, b) => (a.createdAt ?? '').localeCompare(b.createdAt ?? '') || a.id.localeCompare(b.id));
}

/** Whether the user exists (the token command reports an unknown user as an error). */
export async function userExists(doc: DynamoDBDocumentClient, tableName: string, userId: number): Promise<boolean> {
  const user = await doc.send(new GetCommand({ TableName: tableName, Key: userKey(userId), ConsistentRead: true }));
  return user.Item !== undefined;
}
