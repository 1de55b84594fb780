import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { forEachConcurrently } from './concurrently.ts';
import {
  memberKey,
  membershipEntry,
  teamRecordKey,
  tokenKey,
  userKey,
  userTokenHashOf,
  userTokensQuery,
} from '../table/keys.ts';
import { memberItem, readTeamRecord } from './items.ts';
import { readItems, queryAll } from './reads.ts';
import { conditionally, deleteRequest, putRequest, type TableRef, type Writer, writeRequests } from './writer.ts';

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

/**
 * Adds (ADD) or removes (DELETE) membership entries of a token of `userId`. A token that does not
 * exist is left alone, and so is one of another user: a user's index may name a token it never got
 * (a write killed between the index and the token), which a later write gave to someone else.
 */
async function changeMemberships(
  { doc, tableName }: TableRef,
  hash: string,
  userId: number,
  change: 'ADD' | 'DELETE',
  entries: string[],
): Promise<void> {
  if (entries.length === 0) return;
  await conditionally(
    doc.send(
      new UpdateCommand({
        TableName: tableName,
        Key: tokenKey(hash),
        UpdateExpression: `${change} memberships :entries`,
        ConditionExpression: 'user_id = :user',
        ExpressionAttributeValues: { ':entries': new Set(entries), ':user': userId },
      }),
    ),
  );
}

/** Adds a team to (ADD) or takes it from (DELETE) the user item's `teams`. */
function changeUserTeams(writer: Writer, userId: number, change: 'ADD' | 'DELETE', teamId: number) {
  writer.locks.assertHeld(teamId);
  return writer.doc.send(
    new UpdateCommand({
      TableName: writer.tableName,
      Key: userKey(userId),
      UpdateExpression: `${change} teams :team`,
      ExpressionAttributeValues: { ':team': new Set([teamId]) },
    }),
  );
}

/**
 * Users join (ADD) or leave (DELETE) a team's members: their user items, the team's member index, then
 * every token of each.
 */
export async function changeMembers(
  writer: Writer,
  teamId: number,
  membersGeneration: string,
  userIds: number[],
  change: 'ADD' | 'DELETE',
) {
  const entry = [membershipEntry(teamId, membersGeneration)];
  await forEachConcurrently(userIds, async (userId) => {
    await changeUserTeams(writer, userId, change, teamId);
    const index =
      change === 'ADD'
        ? putRequest(memberItem(teamId, membersGeneration, userId))
        : deleteRequest(memberKey(teamId, membersGeneration, userId));
    await writeRequests(writer, [index], teamId);
    for (const hash of await listUserTokens(writer, userId)) {
      writer.locks.assertHeld(teamId);
      await changeMemberships(writer, hash, userId, change, entry);
    }
  });
}

/**
 * The membership entries a user's tokens should carry: one for each team its user item lists whose
 * member index (in the team's members generation) holds the user.
 */
export async function userMemberships(table: TableRef, userId: number): Promise<Set<string>> {
  const { Item: user } = await table.doc.send(
    new GetCommand({ TableName: table.tableName, Key: userKey(userId), ConsistentRead: true }),
  );
  const teamIds = [...((user?.teams as Iterable<number> | undefined) ?? [])];
  const teams = (await readItems(table, teamIds.map(teamRecordKey))).map(readTeamRecord);
  const indexKeys = teams.map((team) => memberKey(team.identity.id, team.membersGeneration, userId));
  const indexed = new Set((await readItems(table, indexKeys)).map((item) => String(item.pk)));
  return new Set(
    teams
      .filter((_, i) => indexed.has(indexKeys[i]!.pk))
      .map((team) => membershipEntry(team.identity.id, team.membersGeneration)),
  );
}

/**
 * Brings tokens of one user that were given `entries` (written with them, or just issued) in line with
 * the user's memberships as they are once they exist. Used for the tokens `token create` issues and
 * the new tokens of a write, neither under a team's lock. A writer that takes a member away or adds
 * one meanwhile changes the index before it lists the user's tokens, and a token not yet written is
 * not listed: so once the tokens exist, the memberships are read again, and whatever changed
 * meanwhile is added or removed. Whichever comes first, no entry of a member who left stays, and no
 * member who joined is left out.
 */
export async function settleTokenMemberships(
  table: TableRef,
  userId: number,
  hashes: string[],
  entries: ReadonlySet<string>,
) {
  const now = await userMemberships(table, userId);
  const added = [...now].filter((entry) => !entries.has(entry));
  const gone = [...entries].filter((entry) => !now.has(entry));
  await forEachConcurrently(hashes, async (hash) => {
    await changeMemberships(table, hash, userId, 'ADD', added);
    await changeMemberships(table, hash, userId, 'DELETE', gone);
  });
}

/** Gives tokens of one user the entries of every team it is a member of (`token create`). */
export async function tagTokenMemberships(table: TableRef, userId: number, ...hashes: string[]): Promise<void> {
  await settleTokenMemberships(table, userId, hashes, new Set());
}
