import { generationPartition, TOKEN_PREFIX, type Key } from '../../shared/store/keys.ts';

/**
 * The keys of the items only the commands read and write, beside the ones they share with the
 * API functions (re-exported here, decided in shared/store/keys.ts).
 *
 * | item                         | pk                                  | sk                        |
 * |------------------------------|-------------------------------------|---------------------------|
 * | user                         | USER#<id>                           | USER                      |
 * | user's token (an index)      | USER#<id>                           | TOKEN#<sha256 hex>        |
 * | a generation's members       | TEAM#<id>#G<generation>#MEMBER      | <user id>                 |
 * | generation ledger: pending   | GENERATIONS                         | P#<team id>#<generation>  |
 * | generation ledger: retired   | GENERATIONS                         | R#<retired at ms, 15 digits>#<team id>#<generation> |
 * | ledger: a token not yet valid | GENERATIONS                        | T#<sha256 hex>            |
 * | the import lock              | IMPORT                              | LOCK                      |
 */
export * from '../../shared/store/keys.ts';

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
/** A token an import wrote inactive, until it activates it: an import that dies leaves it here for the next. */
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
