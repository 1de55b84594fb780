import type { ListResource } from '../routes.ts';

/**
 * The keys the API functions read, which the commands that write those items must use too
 * (the commands' own items, users, member indexes, the generation ledger and the import lock,
 * are keyed in commands/store/keys.ts). Nothing else writes a key literal or slices one apart.
 *
 * | item            | pk                                  | sk                |
 * |-----------------|-------------------------------------|-------------------|
 * | team head       | TEAMREF#<id> and TEAMREF#<slug>     | HEAD              |
 * | finance summary | TEAMREF#<id> and TEAMREF#<slug>     | FINANCE           |
 * | token           | TOKEN#<sha256 hex>                  | TOKEN             |
 * | project         | TEAM#<id>#G<generation>#projects    | 10-digit ordinal  |
 * | daemon          | TEAM#<id>#G<generation>#daemons     | 10-digit ordinal  |
 *
 * A token carries its memberships as a string set of `<team id>#<generation>` entries
 * (membershipEntry): a reader grants a team when the entry of the generation the team's head
 * names is on the token, so members switch with the team's data in the same instant.
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
