import type { ListResource } from '../routes.ts';

/**
 * The table's one key layout: the items the API functions read, and those only the commands read
 * and write. Nothing else writes a key literal or slices one apart.
 *
 * Read by the functions (and written by the commands with these same keys):
 *
 * | item            | pk                                  | sk                |
 * |-----------------|-------------------------------------|-------------------|
 * | team head       | TEAMREF#<id> and TEAMREF#<slug>     | HEAD              |
 * | finance summary | TEAMREF#<id> and TEAMREF#<slug>     | FINANCE           |
 * | token           | TOKEN#<sha256 hex>                  | TOKEN             |
 * | project         | TEAM#<id>#G<generation>#projects    | 10-digit ordinal  |
 * | daemon          | TEAM#<id>#G<generation>#daemons     | 10-digit ordinal  |
 *
 * Only the commands' (the functions never read them):
 *
 * | item                          | pk                              | sk                          |
 * |-------------------------------|---------------------------------|-----------------------------|
 * | user                          | USER#<id>                       | USER                        |
 * | user's token (an index)       | USER#<id>                       | TOKEN#<sha256 hex>          |
 * | a generation's members        | TEAM#<id>#G<generation>#MEMBER  | <user id>                   |
 * | generation ledger: pending    | GENERATIONS                     | P#<team id>#<generation>    |
 * | generation ledger: retired    | GENERATIONS                     | R#<retired at ms>#<team id>#<generation> |
 * | ledger: a token not yet valid | GENERATIONS                     | T#<sha256 hex>              |
 * | the import lock               | IMPORT                          | LOCK                        |
 *
 * (A retired entry's time is in milliseconds, 15 digits.) A token carries its memberships as a
 * string set of `<team id>#<generation>` entries (membershipEntry): a reader grants a team when
 * the entry of the generation the team's head names is on the token, so members switch with the
 * team's data in the same instant.
 */

/** The table's key attributes: both strings. The stack and the local tools declare the table with these. */
export const KEY_SCHEMA = { partitionKey: 'pk', sortKey: 'sk' } as const;

export interface Key {
  pk: string;
  sk: string;
}

export const teamHeadKey = (ref: string | number): Key => ({ pk: `TEAMREF#${ref}`, sk: 'HEAD' });
export const teamFinanceKey = (ref: string | number): Key => ({ pk: `TEAMREF#${ref}`, sk: 'FINANCE' });

/**
 * The key of a request's team segment, or undefined when the segment is too long to name a team
 * (a key attribute may hold 2048 bytes; DynamoDB would refuse the read).
 */
export function teamKeyForSegment(segment: string, part: 'HEAD' | 'FINANCE'): Key | undefined {
  return Buffer.byteLength(segment) > 1024 ? undefined : { pk: `TEAMREF#${segment}`, sk: part };
}

export const TOKEN_PREFIX = 'TOKEN#';
export const tokenKey = (hash: string): Key => ({ pk: `${TOKEN_PREFIX}${hash}`, sk: 'TOKEN' });

/** A partition of one generation of a team: its projects, its daemons (and its member index). */
export const generationPartition = (teamId: number, generation: string, part: ListResource | 'MEMBER') =>
  `TEAM#${teamId}#G${generation}#${part}`;

/** A token's membership of one generation of a team. */
export const membershipEntry = (teamId: number, generation: string) => `${teamId}#${generation}`;

/** Dense ordinals, zero-padded so that string order is numeric order. */
export const ordinalKey = (ordinal: number) => String(ordinal).padStart(10, '0');

// ---- The commands' own items ----------------------------------------------------------------

/** The hash a token item's pk names. */
export const tokenHashOf = (key: Key): string => key.pk.slice(TOKEN_PREFIX.length);

const USER_PREFIX = 'USER#';
export const userKey = (userId: number): Key => ({ pk: `${USER_PREFIX}${userId}`, sk: 'USER' });
export const userIdOf = (key: Key): number => Number(key.pk.slice(USER_PREFIX.length));
export const userTokenKey = (userId: number, hash: string): Key => ({
  pk: `${USER_PREFIX}${userId}`,
  sk: `${TOKEN_PREFIX}${hash}`,
});
/** The Query that lists a user's token index: pk and sort-key bounds. */
export const userTokensQuery = (userId: number) => ({
  pk: userKey(userId).pk,
  range: { from: TOKEN_PREFIX, to: `${TOKEN_PREFIX}\uffff` },
});
/** The hash a user's token index item names. */
export const userTokenHashOf = (key: Key): string => key.sk.slice(TOKEN_PREFIX.length);

/** The members of one generation of a team: one item per user, so a sweep can find their tokens. */
export const memberPartition = (teamId: number, generation: string) =>
  generationPartition(teamId, generation, 'MEMBER');
export const memberKey = (teamId: number, generation: string, userId: number): Key => ({
  pk: memberPartition(teamId, generation),
  sk: String(userId),
});
export const memberUserIdOf = (key: Key): number => Number(key.sk);

/**
 * The generation ledger, one partition: a generation is `pending` from its reservation until its
 * switch, and `retired` (with the time) from the switch that replaced it until it is swept. The
 * sort key of a retired entry starts with the time, so "retired before T" is one Query.
 */
export const LEDGER_PARTITION = 'GENERATIONS';
const PENDING = 'P#';
const RETIRED = 'R#';
const TIME_DIGITS = 15;
export const pendingKey = (teamId: number, generation: string): Key => ({
  pk: LEDGER_PARTITION,
  sk: `${PENDING}${teamId}#${generation}`,
});
export const retiredKey = (teamId: number, generation: string, retiredAtMs: number): Key => ({
  pk: LEDGER_PARTITION,
  sk: `${RETIRED}${String(retiredAtMs).padStart(TIME_DIGITS, '0')}#${teamId}#${generation}`,
});
/**
 * A token an import wrote inactive, until it activates it: an import that dies leaves it here for
 * the next.
 */
export const pendingTokenKey = (hash: string): Key => ({ pk: LEDGER_PARTITION, sk: `T#${hash}` });
/** Sort-key bounds: every pending entry; every entry retired at or before `ms`; every pending token. */
export const pendingRange = () => ({ from: PENDING, to: `${PENDING}\uffff` });
export const pendingTokensRange = () => ({ from: 'T#', to: 'T#\uffff' });
export const retiredUntil = (ms: number) => ({
  from: RETIRED,
  to: `${RETIRED}${String(ms).padStart(TIME_DIGITS, '0')}#\uffff`,
});

/** The one import lock of the table. */
export const importLockKey = (): Key => ({ pk: 'IMPORT', sk: 'LOCK' });
