/**
 * The table's one key layout: every item the functions read and the writers (import, sync, token)
 * write. Nothing else writes a key literal or slices one apart.
 *
 * | item                            | pk                               | sk                              |
 * |---------------------------------|----------------------------------|---------------------------------|
 * | a list's head                   | TEAMREF#<id> and TEAMREF#<slug>  | LIST#projects, LIST#daemons     |
 * | finance summary                 | TEAMREF#<id> and TEAMREF#<slug>  | FINANCE                         |
 * | the team, as writers know it    | TEAMREF#<id>                     | TEAM                            |
 * | token                           | TOKEN#<sha256 hex>               | TOKEN                           |
 * | project                         | TEAM#<id>#G<generation>#projects | slot key (list-layout.ts)       |
 * | daemon                          | TEAM#<id>#G<generation>#daemons  | slot key (list-layout.ts)       |
 * | a list generation's item hashes | TEAM#<id>#G<generation>#<list>#H | <page, 10 digits>               |
 * | a team's members (an index)     | TEAM#<id>#G<members gen>#MEMBER  | <user id>                       |
 * | user                            | USER#<id>                        | USER                            |
 * | user's token (an index)         | USER#<id>                        | TOKEN#<sha256 hex>              |
 * | Sanctum id of a token (index)   | SANCTUM#<shard>                  | <id, 16 digits>                 |
 * | the teams the table holds       | TEAMS                            | <id, 16 digits>                 |
 * | ledger of a team's writes       | LEDGER#<shard>                   | P#, R# or V# entries (below)    |
 * | a team's writers' lock          | LOCK#<team id>                   | LOCK                            |
 * | the running import's lease      | IMPORT                           | LEASE                           |
 * | the running sync's lease        | SYNC                             | LEASE                           |
 *
 * A list request reads the token and its list's head (one BatchGetItem), then one Query of the
 * list's generation for the keys the head names (shared/table/list-layout.ts); a finances request
 * reads the token and the finance item. A token carries its memberships as a string set of
 * `<team id>#<members generation>` entries (membershipEntry): a reader grants a team when the entry of
 * the members generation that the list head (or finance item) names is on the token. The members
 * generation of a team changes only when the team is created again, so adding or removing a member
 * touches only that user's items (docs/snapshots.md, "How it is stored").
 *
 * Partitions that every write would share (the ledger, the Sanctum index) are spread over SHARDS
 * partition key values by team or token id: DynamoDB takes at most 1,000 write units a second on one
 * partition key value (docs/performance.md).
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

/** Partition key values a shared index is spread over. */
const SHARDS = 16;
const shardOf = (id: number) => id % SHARDS;

const TEAMREF = 'TEAMREF#';
export const listHeadKey = (ref: string | number, list: ListResource): Key => ({
  pk: `${TEAMREF}${ref}`,
  sk: `LIST#${list}`,
});
export const teamFinanceKey = (ref: string | number): Key => ({ pk: `${TEAMREF}${ref}`, sk: 'FINANCE' });
/** The team as its writers keep it (by id only): identity, revision, fingerprints of its parts. */
export const teamRecordKey = (teamId: number): Key => ({ pk: `${TEAMREF}${teamId}`, sk: 'TEAM' });

/** The items a team's slug or id names: both lists' heads and the finance summary. */
export const teamRefKeys = (ref: string | number): Key[] => [
  ...LIST_RESOURCES.map((list) => listHeadKey(ref, list)),
  teamFinanceKey(ref),
];

/**
 * The key of a request's team segment, or undefined when the segment is too long to name a team
 * (a key attribute may hold 2048 bytes; DynamoDB would refuse the read).
 */
export function teamKeyForSegment(segment: string, part: ListResource | 'FINANCE'): Key | undefined {
  if (Buffer.byteLength(segment) > 1024) return undefined;
  return part === 'FINANCE' ? teamFinanceKey(segment) : listHeadKey(segment, part);
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

/**
 * The ids and item hashes of a list generation's base slots as it was written dense, a page of slots
 * an item (shared/write/list-hashes.ts): for writers only, never read by the API.
 */
export const listHashesPartition = (teamId: number, generation: string, list: ListResource) =>
  `${generationPartition(teamId, generation, list)}#H`;
export const listHashesKey = (teamId: number, generation: string, list: ListResource, page: number): Key => ({
  pk: listHashesPartition(teamId, generation, list),
  sk: String(page).padStart(10, '0'),
});

/** A token's membership of a team, in the team's members generation. */
export const membershipEntry = (teamId: number, membersGeneration: string) => `${teamId}#${membersGeneration}`;

const USER_PREFIX = 'USER#';
export const userKey = (userId: number): Key => ({ pk: `${USER_PREFIX}${userId}`, sk: 'USER' });
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
 * (docs/contract.md, section 7). Spread over SHARDS partitions by id.
 */
export const sanctumPartitions = () => Array.from({ length: SHARDS }, (_, shard) => `SANCTUM#${shard}`);
export const sanctumKey = (sanctumId: number): Key => ({
  pk: `SANCTUM#${shardOf(sanctumId)}`,
  sk: idSortKey(sanctumId),
});

/** Every team the table holds, one item each: what a sync compares with the source's teams. */
export const TEAMS_PARTITION = 'TEAMS';
export const teamListKey = (teamId: number): Key => ({ pk: TEAMS_PARTITION, sk: idSortKey(teamId) });

/**
 * The ledger of what writes leave behind (shared/write/ledger.ts), spread over SHARDS partitions by
 * team: a generation of a part `pending` from its reservation until its switch (P#), a generation
 * `retired` (R#) or the versions of a list's items replaced by one change (V#), from the switch that
 * replaced them until they are swept, with the time first so that "retired before T" is one Query a
 * shard.
 */
export const ledgerPartitions = () => Array.from({ length: SHARDS }, (_, shard) => `LEDGER#${shard}`);
const ledgerPartition = (teamId: number) => `LEDGER#${shardOf(teamId)}`;
const TIME_DIGITS = 15;
const at = (ms: number) => String(ms).padStart(TIME_DIGITS, '0');
export const pendingKey = (teamId: number, generation: string, part: GenerationPart): Key => ({
  pk: ledgerPartition(teamId),
  sk: `P#${teamId}#${generation}#${part}`,
});
export const retiredKey = (teamId: number, generation: string, part: GenerationPart, retiredAtMs: number): Key => ({
  pk: ledgerPartition(teamId),
  sk: `R#${at(retiredAtMs)}#${teamId}#${generation}#${part}`,
});
/** The versions one revision of a list replaced (the entry lists their keys). */
export const replacedKey = (
  teamId: number,
  generation: string,
  list: ListResource,
  revision: number,
  retiredAtMs: number,
): Key => ({
  pk: ledgerPartition(teamId),
  sk: `V#${at(retiredAtMs)}#${teamId}#${generation}#${list}#${revision}`,
});
/** Sort-key bounds within a ledger shard. */
export const pendingRange = () => ({ from: 'P#', to: 'P#\uffff' });
export const retiredUntil = (ms: number) => ({ from: 'R#', to: `R#${at(ms)}#\uffff` });
export const replacedUntil = (ms: number) => ({ from: 'V#', to: `V#${at(ms)}#\uffff` });

/** A team's writers' lock: an import or a sync writing that team holds it. */
export const teamLockKey = (teamId: number): Key => ({ pk: `LOCK#${teamId}`, sk: 'LOCK' });
/** The lease of the one import that may run against the table at a time. */
export const importLeaseKey = (): Key => ({ pk: 'IMPORT', sk: 'LEASE' });
/** The lease of the one sync that may run against the table. */
export const syncLeaseKey = (): Key => ({ pk: 'SYNC', sk: 'LEASE' });
/** The place of the one deployed sync invocation waiting to take the lease over (shared/sync/handover.ts). */
export const syncSuccessorKey = (): Key => ({ pk: 'SYNC', sk: 'NEXT' });
