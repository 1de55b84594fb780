import { sanctumKey, TOKEN_PREFIX, tokenKey, userKey } from '../table/keys.ts';
import type { DesiredState, DesiredToken, DesiredUser } from './desired.ts';
import { textFingerprint } from './fingerprint.ts';
import { readToken, type StoredToken } from './items.ts';
import { readItems } from './reads.ts';
import type { TableRef } from './writer.ts';

/**
 * The users and tokens of a write (docs/contract.md, sections 6, 7 and 9): what changes, compared
 * with what the table holds. Rights taken away are in force before any team switches (narrowing),
 * rights granted only after the last (widening): apply.ts runs them in that order.
 */

export interface TokenPlan {
  /** Tokens to write once every team has switched: new, or moved to another user. */
  created: DesiredToken[];
  /** Tokens whose Sanctum id's item must name them as they are now (new, changed, or not indexed yet). */
  indexed: DesiredToken[];
  /** Tokens that stay, with what they hold now: narrowed first, widened last. */
  kept: { desired: DesiredToken; stored: StoredToken }[];
  /** Tokens to remove before any switch: gone from the source, or replaced by a token of the same Sanctum id. */
  removed: { hash: string; userId: number; sanctumId?: number }[];
}

export interface UserPlan {
  /** Users to write (new, or renamed), with their name. */
  written: DesiredUser[];
  removed: number[];
}

export type TokenProblem = { kind: 'tokenOfAnotherUser'; token: DesiredToken; owner: number };

/** Teams one user may be a member of (docs/contract.md, section 7). */
export const TEAMS_PER_USER = 1_000;

/** Users to write and remove; the stored users, for the limit on teams a user joins. */
export async function planUsers(table: TableRef, desired: DesiredState, alsoRead: number[]) {
  const removed = desired.removedUsers ?? [];
  const ids = new Set([...desired.users.map((user) => user.id), ...alsoRead, ...removed]);
  const stored = new Map(
    (await readItems(table, [...ids].map(userKey))).map((item) => [
      Number(String(item.pk).slice('USER#'.length)),
      item,
    ]),
  );
  const plan: UserPlan = {
    written: desired.users.filter((user) => {
      const item = stored.get(user.id);
      return !item || item.name !== user.name;
    }),
    removed: removed.filter((id) => stored.has(id)),
  };
  const teamsOf = (id: number) => [...((stored.get(id)?.teams as Iterable<number> | undefined) ?? [])];
  return { plan, teamsOf };
}

/** Tokens to create, keep (narrowed and widened) and remove. */
export async function planTokens(
  table: TableRef,
  desired: DesiredState,
  tokenOfAnotherUser: 'refuse' | 'move',
  problems: TokenProblem[],
): Promise<TokenPlan> {
  const get = (keys: { pk: string; sk: string }[]) => readItems(table, keys);
  const byHash = new Map(
    (await get(desired.tokens.map((token) => tokenKey(token.hash)))).map((item) => [String(item.pk), readToken(item)]),
  );
  const sanctumIds = [
    ...desired.tokens.flatMap((token) => (token.sanctumId === undefined ? [] : [token.sanctumId])),
    ...(desired.removedTokens ?? []),
  ];
  const indexItems = new Map(
    (await get(sanctumIds.map(sanctumKey))).map((item) => [
      Number(item.sanctum_id),
      { hash: String(item.hash), fingerprint: String(item.fingerprint) },
    ]),
  );
  const plan: TokenPlan = { created: [], indexed: [], kept: [], removed: [] };
  // The tokens that go (gone from the source, or replaced by another of their Sanctum id): read at
  // once, as many as there are (a mass delete of thousands).
  const going = new Set<string>();
  for (const token of desired.tokens) {
    const holder = token.sanctumId === undefined ? undefined : indexItems.get(token.sanctumId)?.hash;
    // Sanctum's id is its primary key: the token that held it before is replaced, and stops working.
    if (holder !== undefined && holder !== token.hash) going.add(holder);
  }
  for (const sanctumId of desired.removedTokens ?? []) {
    const hash = indexItems.get(sanctumId)?.hash;
    if (hash !== undefined) going.add(hash);
  }
  for (const item of await get([...going].map(tokenKey))) {
    const { userId, sanctumId } = readToken(item);
    plan.removed.push({ hash: String(item.pk).slice(TOKEN_PREFIX.length), userId, sanctumId });
  }
  for (const token of desired.tokens) {
    const stored = byHash.get(tokenKey(token.hash).pk);
    if (!stored) plan.created.push(token);
    else if (stored.userId !== token.userId) {
      if (tokenOfAnotherUser === 'refuse') problems.push({ kind: 'tokenOfAnotherUser', token, owner: stored.userId });
      else {
        plan.removed.push({ hash: token.hash, userId: stored.userId, sanctumId: stored.sanctumId });
        plan.created.push(token);
      }
    } else plan.kept.push({ desired: token, stored });
    const index = token.sanctumId === undefined ? undefined : indexItems.get(token.sanctumId);
    if (token.sanctumId !== undefined && index?.fingerprint !== tokenFingerprint(token)) plan.indexed.push(token);
  }
  return plan;
}

/**
 * What a token of the source says, as one text: the Sanctum id's item keeps it, so that a sync's full
 * pass compares every token with one Query a shard instead of a read of each token.
 */
export const tokenFingerprint = (token: DesiredToken): string =>
  textFingerprint(
    JSON.stringify([token.hash, token.userId, token.name, token.abilities, token.expiresAt, token.createdAt ?? null]),
  );

type Kept = TokenPlan['kept'][number];

/** What a kept token holds once narrowed: the abilities both grant, the earlier expiry. */
export function narrowedToken({ desired, stored }: Kept) {
  return {
    abilities: commonAbilities(stored.abilities, desired.abilities),
    expiresAt: earlierExpiry(stored.expiresAt, desired.expiresAt),
  };
}

/** Whether a write widens a kept token (after narrowing it): what it grants, its name, its Sanctum id or its time. */
export function widensToken(kept: Kept): boolean {
  const narrowed = narrowedToken(kept);
  const { desired, stored } = kept;
  return (
    String(desired.abilities) !== String(narrowed.abilities) ||
    desired.expiresAt !== narrowed.expiresAt ||
    desired.name !== stored.name ||
    desired.sanctumId !== stored.sanctumId ||
    (desired.createdAt !== undefined && desired.createdAt !== stored.createdAt)
  );
}

/** The abilities both lists grant (`*` grants every one). */
function commonAbilities(stored: string[], given: string[]): string[] {
  if (stored.includes('*')) return given;
  if (given.includes('*')) return stored;
  return stored.filter((ability) => given.includes(ability));
}

/** The earlier of two expiries (null: never). */
function earlierExpiry(stored: string | null, given: string | null): string | null {
  if (stored === null || given === null) return stored ?? given;
  return Date.parse(given) < Date.parse(stored) ? given : stored;
}
