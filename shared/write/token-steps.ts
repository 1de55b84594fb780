import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { sanctumKey, tokenKey, userKey, userTokenKey } from '../table/keys.ts';
import { forEachConcurrently } from './concurrently.ts';
import type { DesiredToken, DesiredUser } from './desired.ts';
import { sanctumIndexItem, tokenItem, userTokenItem } from './items.ts';
import { settleTokenMemberships, userMemberships } from './memberships.ts';
import { narrowedToken, type TokenPlan, tokenFingerprint, widensToken } from './plan-tokens.ts';
import { conditionally, deleteRequest, putRequest, type TableRef, type Writer, writeRequests } from './writer.ts';

/**
 * The token and user steps of a write (apply.ts): rights taken away before any team switches, rights
 * granted after the last (docs/contract.md, sections 7 and 9). A token of a write is written once,
 * whole, when it takes effect: its user's index and its Sanctum id's item first (so that a membership
 * change finds it the moment it exists), then the token with the memberships of its user's teams.
 */

/** Before any switch: tokens that go are deleted, tokens that lose abilities or expire earlier are narrowed. */
export async function narrowTokens(table: TableRef, tokens: TokenPlan): Promise<void> {
  const { removed, kept, indexed } = tokens;
  const reindexed = new Set(indexed.map((token) => token.sanctumId));
  // The tokens first, which is what revokes them (thousands, in a mass delete), then their indexes.
  await writeRequests(
    table,
    removed.map((token) => deleteRequest(tokenKey(token.hash))),
  );
  await writeRequests(
    table,
    removed.flatMap((token) => [
      deleteRequest(userTokenKey(token.userId, token.hash)),
      // Its Sanctum id's item goes with it, unless a token of this write takes the id over.
      ...(token.sanctumId !== undefined && !reindexed.has(token.sanctumId)
        ? [deleteRequest(sanctumKey(token.sanctumId))]
        : []),
    ]),
  );
  await forEachConcurrently(kept, async (token) => {
    const { abilities, expiresAt } = narrowedToken(token);
    const { stored, desired } = token;
    if (String(abilities) !== String(stored.abilities) || expiresAt !== stored.expiresAt) {
      await updateToken(table, desired.hash, desired.userId, { abilities, expires_at: expiresAt });
    }
  });
}

/** Users new or renamed: their names (a user item grants nothing by itself). */
export async function writeUserNames(table: TableRef, users: DesiredUser[]): Promise<void> {
  await forEachConcurrently(users, ({ id, name }) => setUser(table, id, { name }));
}

/**
 * After the last switch: new tokens written whole and valid, kept tokens widened, Sanctum ids
 * indexed, users that are gone removed.
 */
export async function widenTokens(writer: Writer, tokens: TokenPlan, removedUsers: number[], startedAt: number) {
  await writeRequests(
    writer,
    removedUsers.map((id) => deleteRequest(userKey(id))),
  );
  const created = new Set(tokens.created);
  // The indexes first: a membership change that lists the user's tokens finds the new ones.
  await writeRequests(writer, [
    ...tokens.created.map((token) => putRequest(userTokenItem(token.userId, token.hash))),
    ...tokens.indexed.map((token) =>
      putRequest(sanctumIndexItem(token.sanctumId!, token.hash, token.userId, tokenFingerprint(token))),
    ),
  ]);
  const byUser = Map.groupBy(tokens.created, (token) => token.userId);
  await forEachConcurrently([...byUser], async ([userId, mine]) => {
    // The user's memberships read once for all of its tokens (a first load gives a user thousands).
    const memberships = await userMemberships(writer, userId);
    await writeRequests(
      writer,
      mine.map((token) => putRequest(tokenItem({ ...fieldsOf(token, startedAt), memberships }))),
    );
    await settleTokenMemberships(
      writer,
      userId,
      mine.map((token) => token.hash),
      memberships,
    );
  });
  await forEachConcurrently(
    tokens.kept.filter((kept) => widensToken(kept) && !created.has(kept.desired)),
    ({ desired }) =>
      updateToken(writer, desired.hash, desired.userId, {
        abilities: desired.abilities,
        expires_at: desired.expiresAt,
        name: desired.name,
        sanctum_id: desired.sanctumId,
        ...(desired.createdAt !== undefined && { created_at: desired.createdAt }),
      }),
  );
}

const fieldsOf = (token: DesiredToken, startedAt: number) => ({
  hash: token.hash,
  userId: token.userId,
  abilities: token.abilities,
  expiresAt: token.expiresAt,
  name: token.name,
  sanctumId: token.sanctumId,
  createdAt: token.createdAt ?? new Date(startedAt).toISOString(),
});

/** Sets the attributes given, removes those given as undefined: on condition that the token is still its user's. */
async function updateToken(table: TableRef, hash: string, userId: number, attributes: Record<string, unknown>) {
  const update = updateOf(attributes);
  // Gone meanwhile (revoked by another writer): a token that does not exist grants nothing to widen.
  await conditionally(
    table.doc.send(
      new UpdateCommand({
        TableName: table.tableName,
        Key: tokenKey(hash),
        ...update,
        ConditionExpression: 'user_id = :user',
        ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ':user': userId },
      }),
    ),
  );
}

/** A user item's attributes, set (the rest of the item stays). */
async function setUser(table: TableRef, userId: number, attributes: Record<string, unknown>): Promise<void> {
  await table.doc.send(
    new UpdateCommand({ TableName: table.tableName, Key: userKey(userId), ...updateOf(attributes) }),
  );
}

/** An update that sets the attributes given and removes those given as undefined. */
function updateOf(attributes: Record<string, unknown>) {
  const names = Object.keys(attributes);
  const set = names.filter((name) => attributes[name] !== undefined);
  const removed = names.filter((name) => attributes[name] === undefined);
  const clauses = [
    ...(set.length > 0 ? [`SET ${set.map((name) => `#${name} = :${name}`).join(', ')}`] : []),
    ...(removed.length > 0 ? [`REMOVE ${removed.map((name) => `#${name}`).join(', ')}`] : []),
  ];
  return {
    UpdateExpression: clauses.join(' '),
    ExpressionAttributeNames: Object.fromEntries(names.map((name) => [`#${name}`, name])),
    // DynamoDB refuses an empty map of values.
    ...(set.length > 0 && {
      ExpressionAttributeValues: Object.fromEntries(set.map((name) => [`:${name}`, attributes[name]])),
    }),
  };
}
