import type { ListResource } from '../domain/resources.ts';

/**
 * The single table's keys (string `pk`/`sk`). One place decides every key shape.
 *
 * | item        | pk                                  | sk                |
 * |-------------|-------------------------------------|-------------------|
 * | team head   | TEAMREF#<id> and TEAMREF#<slug>     | HEAD              |
 * | token       | TOKEN#<sha256 hex>                  | TOKEN             |
 * | user        | USER#<id>                           | USER              |
 * | user token  | USER#<id>                           | TOKEN#<sha256>    |
 * | project     | TEAM#<id>#G<generation>#projects    | 10-digit ordinal  |
 * | daemon      | TEAM#<id>#G<generation>#daemons     | 10-digit ordinal  |
 */
/** The table's key attributes: both strings. The stack and the local tools declare the table with these. */
export const KEY_SCHEMA = { partitionKey: 'pk', sortKey: 'sk' } as const;

export interface Key {
  pk: string;
  sk: string;
}

export const HEAD = 'HEAD';
/** A key attribute may hold 2048 bytes; a longer team segment cannot name a team. */
const MAX_TEAM_REF_BYTES = 1024;

export const teamHeadKey = (ref: string | number): Key => ({ pk: `TEAMREF#${ref}`, sk: HEAD });

/** The head key a request's team segment names, or undefined when it cannot name one. */
export function teamHeadKeyForSegment(segment: string): Key | undefined {
  if (segment.length === 0 || Buffer.byteLength(segment) > MAX_TEAM_REF_BYTES) return undefined;
  return teamHeadKey(segment);
}

export const tokenKey = (hash: string): Key => ({ pk: `TOKEN#${hash}`, sk: 'TOKEN' });
export const userKey = (userId: number): Key => ({ pk: `USER#${userId}`, sk: 'USER' });
export const userTokenKey = (userId: number, hash: string): Key => ({ pk: `USER#${userId}`, sk: `TOKEN#${hash}` });

export const resourcePartition = (teamId: number, generation: string, resource: ListResource) =>
  `TEAM#${teamId}#G${generation}#${resource}`;

/** Dense ordinals, zero-padded so that string order is numeric order. */
export const ORDINAL_DIGITS = 10;
export const ordinalKey = (ordinal: number) => String(ordinal).padStart(ORDINAL_DIGITS, '0');
