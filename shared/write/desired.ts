import { hash } from 'node:crypto';
import type { ListResource } from '../table/keys.ts';
import type { TeamIdentity } from './items.ts';
import type { ListEdit } from './list-edits.ts';

/**
 * What a write asks of the table (docs/contract.md, sections 7 and 9): the one value both front ends
 * produce, the import from a snapshot (commands/import/) and the sync from the source database
 * (shared/sync/), and that one path plans and applies (plan.ts, apply.ts). Teams, users and tokens
 * not named are left alone.
 */

/**
 * A list given whole: how many items, their fingerprint (fingerprint.ts), and each item's id with the
 * hash of its JSON as served, in id order. The JSON itself is handed over only for the items that are
 * to be written (ItemSource), so a front end never has to hold a large list's JSON.
 */
export interface WholeList {
  count: number;
  fingerprint: string;
  ids: ArrayLike<number>;
  hashes: ArrayLike<bigint>;
}

/** A list given by the item: these ids hold this JSON now, or nothing (the sync's changes). */
interface ListChanges {
  edits: ListEdit[];
}

export type DesiredList = WholeList | ListChanges;
export const isWhole = (list: DesiredList): list is WholeList => 'ids' in list;

/**
 * A team as it should be. A part left out (a sync that found a bad row in it, or read only some
 * parts) is kept as the table holds it; a team the table does not hold yet needs every part whole.
 */
export interface DesiredTeam {
  identity: TeamIdentity;
  /** Where it came from, for messages: `teams[3] (id 7)`, or the source's table and id. */
  where: string;
  projects?: DesiredList;
  daemons?: DesiredList;
  /** The finance response's fields (shared/domain/finance.ts) and their fingerprint. */
  finance?: { json: string; fingerprint: string };
  /** The team's members, each once. */
  memberIds?: number[];
}

export interface DesiredUser {
  id: number;
  name?: string;
}

export interface DesiredToken {
  /** Where it came from, for messages. */
  where: string;
  /** SHA-256 of the secret: the token's key. */
  hash: string;
  userId: number;
  /** Laravel Sanctum's id of the token: its primary key there, so it names one token here too. */
  sanctumId?: number;
  name?: string;
  abilities: string[];
  expiresAt: string | null;
  /** Sanctum's `created_at`, for a migrated token (UTC ISO 8601); else when the table got it. */
  createdAt?: string;
}

export interface DesiredState {
  teams: DesiredTeam[];
  users: DesiredUser[];
  tokens: DesiredToken[];
  /** Teams to remove, by id (a sync: gone from the source). */
  removedTeams?: number[];
  /** Users to remove, by id (a sync: gone from the source); their memberships go with the teams that list them. */
  removedUsers?: number[];
  /** Tokens to remove, by Sanctum id (a sync: deleted in the source, as Sanctum revokes). */
  removedTokens?: number[];
}

/** Hands over the JSON of items a write needs: for each team and list, the ids asked (all: 'all'). */
export type ItemNeeds = Map<number, Map<ListResource, 'all' | ReadonlySet<number>>>;
export type EmitItem = (teamId: number, list: ListResource, id: number, json: string) => void | Promise<void>;
/** Emits the JSON of every item `needs` names (and may emit more: it is skipped). */
export type ItemSource = (needs: ItemNeeds, emit: EmitItem) => Promise<void>;

/** An item's hash: the first 8 bytes of the SHA-256 of its JSON as served (what a list's diff compares). */
export const itemHash = (json: string): bigint => hash('sha256', json, 'buffer').readBigUInt64BE(0);
