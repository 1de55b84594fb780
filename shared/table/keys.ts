/**
 * The table's one key layout: every item the functions read and the writers (import, sync, token)
 * write. Nothing else writes a key literal or slices one apart.
 *
 * | item                            | pk                               | sk                              |
 * |---------------------------------|----------------------------------|---------------------------------|
 * | team head                       | TEAMREF#<id> and TEAMREF#<slug>  | HEAD                            |
 * | finance summary                 | TEAMREF#<id> and TEAMREF#<slug>  | FINANCE                         |
 * | token                           | TOKEN#<sha256 hex>               | TOKEN                           |
 * | project                         | TEAM#<id>#G<generation>#projects | 10-digit ordinal                |
 * | daemon                          | TEAM#<id>#G<generation>#daemons  | 10-digit ordinal                |
 * | a team's members (an index)     | TEAM#<id>#G<members gen>#MEMBER  | <user id>                       |
 * | user                            | USER#<id>                        | USER                            |
 * | user's token (an index)         | USER#<id>                        | TOKEN#<sha256 hex>              |
 * | Sanctum id of a token (index)   | SANCTUM                          | <id, 16 digits>                 |
 * | the teams the table holds       | TEAMS                            | <id, 16 digits>                 |
 * | ledger: a generation pending    | GENERATIONS                      | P#<team>#<generation>#<part>    |
 * | ledger: a generation retired    | GENERATIONS                      | R#<ms, 15 digits>#<team>#<generation>#<part> |
 * | ledger: a token not yet valid   | GENERATIONS                      | T#<sha256 hex>                  |
 * | the writers' lock               | IMPORT                           | LOCK                            |
 * | the running sync's lease        | SYNC                             | LEASE                           |
 *
 * Each part of a team (its projects, its daemons, its members) has a generation of its own, named
 * on the head; its items are written beside the generation readers use and switched to with the
 * head. A token carries its memberships as a string set of `<team id>#<members generation>`
 * entries (membershipEntry): a reader grants a team when the entry of the members generation the
 * team's head (or finance item) names is on the token. The members generation of a team changes
 * only when the team is created again, so adding or removing a member touches only that user's
 * items (docs/snapshots.md, "How it is stored").
 */
/** The list resources, keyed as in the routes: each has partitions of its own. */
export const LIST_RESOURCES = ['projects', 'daemons'] as const;
export type ListResource = (typeof LIST_RESOURCES)[number];

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
/** The hash a token item's pk names. */
export const tokenHashOf = (key: Key): string => key.pk.slice(TOKEN_PREFIX.length);

/** The parts of a team that have generations of items: its two lists, and its member index. */
export type GenerationPart = ListResource | 'MEMBER';

/** A partition of one generation of a part of a team: its projects, its daemons, or its member index. */
export const generationPartition = (teamId: number, generation: string, part: GenerationPart) =>
  `TEAM#${teamId}#G${generation}#${part}`;

/** A token's membership of a team, in the team's members generation. */
export const membershipEntry = (teamId: number, membersGeneration: string) => `${teamId}#${membersGeneration}`;

/** Dense ordinals, zero-padded so that string order is numeric order. */
export const ordinalKey = (ordinal: number) => String(ordinal).padStart(10, '0');

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

/** The members of one members generation of a team: one item per user, so a writer can find their tokens. */
export const memberPartition = (teamId: number, generation: string) =>
  generationPartition(teamId, generation, 'MEMBER');
export const memberKey = (teamId: number, generation: string, userId: number): Key => ({
  pk: memberPartition(teamId, generation),
  sk: String(userId),
});
export const memberUserIdOf = (key: Key): number => Number(key.sk);

/** Ids in sort keys: 16 digits hold every id up to 9007199254740991, in numeric order. */
const idSortKey = (id: number) => String(id).padStart(16, '0');

/**
 * A token migrated from Laravel Sanctum, by its id: Sanctum's primary key names one token
 * (docs/contract.md, section 7).
 */
export const SANCTUM_PARTITION = 'SANCTUM';
export const sanctumKey = (sanctumId: number): Key => ({ pk: SANCTUM_PARTITION, sk: idSortKey(sanctumId) });

/** Every team the table holds, one item each: what a sync compares with the source's teams. */
export const TEAMS_PARTITION = 'TEAMS';
export const teamListKey = (teamId: number): Key => ({ pk: TEAMS_PARTITION, sk: idSortKey(teamId) });

/**
 * The generation ledger, one partition: a generation of a part is `pending` from its reservation
 * until its switch, and `retired` (with the time) from the switch that replaced it until it is
 * swept. The sort key of a retired entry starts with the time, so "retired before T" is one Query.
 * (Entries written before parts had generations of their own name no part: the whole generation.)
 */
export const LEDGER_PARTITION = 'GENERATIONS';
const PENDING = 'P#';
const RETIRED = 'R#';
const TIME_DIGITS = 15;
export const pendingKey = (teamId: number, generation: string, part: GenerationPart): Key => ({
  pk: LEDGER_PARTITION,
  sk: `${PENDING}${teamId}#${generation}#${part}`,
});
export const retiredKey = (teamId: number, generation: string, part: GenerationPart, retiredAtMs: number): Key => ({
  pk: LEDGER_PARTITION,
  sk: `${RETIRED}${String(retiredAtMs).padStart(TIME_DIGITS, '0')}#${teamId}#${generation}#${part}`,
});
/** A token a writer wrote inactive, until it activates it: a writer that dies leaves it here for the next. */
export const pendingTokenKey = (hash: string): Key => ({ pk: LEDGER_PARTITION, sk: `T#${hash}` });
/** Sort-key bounds: every pending entry; every entry retired at or before `ms`; every pending token. */
export const pendingRange = () => ({ from: PENDING, to: `${PENDING}\uffff` });
export const pendingTokensRange = () => ({ from: 'T#', to: 'T#\uffff' });
export const retiredUntil = (ms: number) => ({
  from: RETIRED,
  to: `${RETIRED}${String(ms).padStart(TIME_DIGITS, '0')}#\uffff`,
});

/** The one lock of the table's writers (an import, or a sync applying a change). */
export const importLockKey = (): Key => ({ pk: 'IMPORT', sk: 'LOCK' });
/** The lease of the one sync that may run against the table. */
export const syncLeaseKey = (): Key => ({ pk: 'SYNC', sk: 'LEASE' });
/** The place of the one deployed sync invocation waiting to take the lease over (shared/sync/handover.ts). */
export const syncSuccessorKey = (): Key => ({ pk: 'SYNC', sk: 'NEXT' });
