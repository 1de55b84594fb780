import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { forEachConcurrently } from './concurrently.ts';
import {
  memberKey,
  membershipEntry,
  teamHeadKey,
  tokenKey,
  userKey,
  userTokenHashOf,
  userTokensQuery,
} from '../table/keys.ts';
import { memberItem, readHead } from './items.ts';
import { getItems, queryAll } from './reads.ts';
import { deleteRequest, putRequest, sendChecked, type TableRef, type Writer, writeRequests } from './writer.ts';

/**
 * Memberships live in three places, each with its own reader (shared/table/keys.ts):
 *
 * - on the user's tokens, as `<team id>#<members generation>` entries in a string set: what a
 *   request checks, so membership costs it no read of its own;
 * - in the team's member index (one item per member): how a writer finds who to remove;
 * - on the user item, as the set `teams`: how `token create` finds which teams to tag a new token with.
 *
 * A member joins in that order reversed (user item, index, then the entries of every token) and
 * leaves in the same order (user item, index, then the entries): whichever step a writer is killed
 * at, the next one finds the member still to join or still to leave. The entries are only ever added
 * to or deleted from the set, never written whole.
 */

/** The hashes of a user's tokens, from the user's token index. */
export async function listUserTokens({ doc, tableName }: TableRef, userId: number): Promise<string[]> {
  const { pk, range } = userTokensQuery(userId);
  return (await queryAll(doc, tableName, pk, { range, keysOnly: true })).map(userTokenHashOf);
}

/** Adds (ADD) or removes (DELETE) membership entries of a token; a token that does not exist is left alone. */
export async function changeMemberships(
  { doc, tableName }: TableRef,
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

/** Adds a team to (ADD) or takes it from (DELETE) the user item's `teams`. */
function changeUserTeams(w: Writer, userId: number, change: 'ADD' | 'DELETE', teamId: number) {
  return sendChecked(
    w,
    new UpdateCommand({
      TableName: w.tableName,
      Key: userKey(userId),
      UpdateExpression: `${change} teams :team`,
      ExpressionAttributeValues: { ':team': new Set([teamId]) },
    }),
  );
}

/** Users join a team's members: their user items, the team's member index, then every token of each. */
export async function joinTeam(w: Writer, teamId: number, membersGeneration: string, userIds: number[]) {
  const entry = [membershipEntry(teamId, membersGeneration)];
  await forEachConcurrently(userIds, async (userId) => {
    await changeUserTeams(w, userId, 'ADD', teamId);
    await writeRequests(w, [putRequest(memberItem(teamId, membersGeneration, userId))]);
    for (const hash of await listUserTokens(w, userId)) {
      w.lock.assertHeld();
      await changeMemberships(w, hash, 'ADD', entry);
    }
  });
}

/** Users leave a team's members: their user items, the team's member index, then every token of each. */
export async function leaveTeam(w: Writer, teamId: number, membersGeneration: string, userIds: number[]) {
  const entry = [membershipEntry(teamId, membersGeneration)];
  await forEachConcurrently(userIds, async (userId) => {
    await changeUserTeams(w, userId, 'DELETE', teamId);
    await writeRequests(w, [deleteRequest(memberKey(teamId, membersGeneration, userId))]);
    for (const hash of await listUserTokens(w, userId)) {
      w.lock.assertHeld();
      await changeMemberships(w, hash, 'DELETE', entry);
    }
  });
}

/**
 * Gives tokens of one user the entries of every team it is a member of: the teams its user item lists,
 * where the team's member index holds the user. Used for a token `token create` issues and for
 * the new tokens of a write, neither under the writers' lock. A writer that takes a member away
 * meanwhile removes the index item before it lists the user's tokens; so once the entries are
 * added, the index is read again and any entry whose index item has gone is removed: whichever
 * comes first, no entry of a member who left stays on the token.
 */
export async function tagTokenMemberships(t: TableRef, userId: number, ...hashes: string[]): Promise<void> {
  const { Item: user } = await t.doc.send(
    new GetCommand({ TableName: t.tableName, Key: userKey(userId), ConsistentRead: true }),
  );
  const teamIds = [...((user?.teams as Iterable<number> | undefined) ?? [])];
  const heads = (await getItems(t.doc, t.tableName, teamIds.map(teamHeadKey), { consistent: true })).map(readHead);
  const indexKeys = heads.map((head) => memberKey(head.identity.id, head.membersGeneration, userId));
  const entryOf = (key: { pk: string }) => {
    const head = heads[indexKeys.findIndex((k) => k.pk === key.pk)]!;
    return membershipEntry(head.identity.id, head.membersGeneration);
  };
  const indexed = async () =>
    new Set(
      (await getItems(t.doc, t.tableName, indexKeys, { consistent: true })).map((item) => entryOf(item as never)),
    );
  // The user's reads once for all of its tokens (a first load gives a user thousands).
  const entries = [...(await indexed())];
  await forEachConcurrently(hashes, (hash) => changeMemberships(t, hash, 'ADD', entries));
  const still = await indexed();
  const gone = entries.filter((entry) => !still.has(entry));
  await forEachConcurrently(hashes, (hash) => changeMemberships(t, hash, 'DELETE', gone));
}
