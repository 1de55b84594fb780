import { randomBytes } from 'node:crypto';
import {
  type GenerationPart,
  generationPartition,
  type ListResource,
  listHeadKey,
  memberKey,
  pendingKey,
  replacedKey,
  retiredKey,
  sanctumKey,
  teamFinanceKey,
  teamListKey,
  teamRecordKey,
  tokenKey,
  userTokenKey,
} from '../table/keys.ts';
import { decodeOverlay, encodeOverlay, type ListLayout } from '../table/list-layout.ts';

/**
 * The items the writers (import, sync, token) write, shaped in one place: the import's validation
 * measures them (in bytes, as DynamoDB does) with the same functions the writers write them with, and
 * each `read…` here is the one reading of an item for a writer. The API reads the same attributes
 * itself (shared/api/team-reader.ts).
 */

export interface TeamIdentity {
  id: number;
  /** A team of Jetstream's stock schema has none: it is addressed by its id alone. */
  slug?: string;
  name: string;
}

/** A list as a writer keeps it: where its items are, and the fingerprint of what it holds. */
export interface ListPart {
  layout: ListLayout;
  fingerprint: string;
}

/**
 * A team as its writers know it: its identity and the state of each part. `revision` grows with every
 * switch of the team's record; a switch is conditioned on the revision it planned from, and a list's
 * switch on the list's own revision, so two writers never interleave within a team.
 */
export interface TeamState {
  identity: TeamIdentity;
  revision: number;
  /** The members generation: the tag of every membership entry of the team. */
  membersGeneration: string;
  membersFingerprint: string;
  financeFingerprint: string;
  lists: Record<ListResource, ListPart>;
}

/** Generation ids: the time in base 36 (8 characters until 2059) and 8 random hex digits. */
const GENERATION_ID_LENGTH = 16;
export function newGenerationId(now: number): string {
  return now.toString(36).padStart(8, '0').slice(-8) + randomBytes(4).toString('hex');
}
const LONGEST_GENERATION = 'g'.repeat(GENERATION_ID_LENGTH);

/** The names a team is addressed by: its id, and its slug when it has one. */
export const teamRefs = (identity: TeamIdentity): (string | number)[] =>
  identity.slug === undefined ? [identity.id] : [identity.id, identity.slug];

/** The team's record (by id only): what a writer reads first. */
export function teamRecordItem(team: Omit<TeamState, 'lists'>) {
  const { identity } = team;
  return {
    ...teamRecordKey(identity.id),
    team_id: identity.id,
    ...(identity.slug !== undefined && { slug: identity.slug }),
    name: identity.name,
    revision: team.revision,
    members_generation: team.membersGeneration,
    members_fingerprint: team.membersFingerprint,
    finance_fingerprint: team.financeFingerprint,
  };
}

/**
 * A list's head (each copy, by id and by slug): what every request for the list reads, with the
 * token. Small: the team, its members generation, and the list's layout (shared/table/list-layout.ts).
 */
export function listHeadItem(
  ref: string | number,
  teamId: number,
  membersGeneration: string,
  list: ListResource,
  part: ListPart,
) {
  const { layout } = part;
  const overlay = encodeOverlay(layout);
  return {
    ...listHeadKey(ref, list),
    team_id: teamId,
    members_generation: membersGeneration,
    generation: layout.generation,
    count: layout.count,
    base: layout.base,
    revision: layout.revision,
    fingerprint: part.fingerprint,
    ...(overlay.length > 0 && { overlay }),
  };
}

/**
 * A team's finance summary (each copy): what a finances request reads. It carries the members
 * generation for the membership check, and the summary's fingerprint for the ETag.
 */
export function financeItem(
  team: TeamIdentity,
  fieldsJson: string,
  fingerprint: string,
  ref: string | number = longerRef(team),
  membersGeneration = LONGEST_GENERATION,
) {
  return {
    ...teamFinanceKey(ref),
    team_id: team.id,
    members_generation: membersGeneration,
    finance_fingerprint: fingerprint,
    finance: fieldsJson,
  };
}

/** One item of a list, at the key its layout gives it. */
export function resourceItem(teamId: number, generation: string, list: ListResource, key: string, json: string) {
  return { pk: generationPartition(teamId, generation, list), sk: key, j: json };
}

export function memberItem(teamId: number, membersGeneration: string, userId: number) {
  return { ...memberKey(teamId, membersGeneration, userId), user_id: userId };
}

/** The table's list of its teams: one small item per team, written with the team's first switch. */
export function teamListItem(teamId: number) {
  return { ...teamListKey(teamId), team_id: teamId };
}

export function pendingItem(teamId: number, generation: string, part: GenerationPart, owner: string, atMs: number) {
  return { ...pendingKey(teamId, generation, part), team_id: teamId, generation, part, owner, reserved_at: atMs };
}

export function retiredItem(teamId: number, generation: string, part: GenerationPart, retiredAtMs: number) {
  return {
    ...retiredKey(teamId, generation, part, retiredAtMs),
    team_id: teamId,
    generation,
    part,
    retired_at: retiredAtMs,
  };
}

/** The versions of a list's items that one revision replaced: swept with this entry once they are due. */
export function replacedItem(
  teamId: number,
  generation: string,
  list: ListResource,
  revision: number,
  keys: string[],
  retiredAtMs: number,
) {
  return {
    ...replacedKey(teamId, generation, list, revision, retiredAtMs),
    team_id: teamId,
    generation,
    part: list,
    keys,
    retired_at: retiredAtMs,
  };
}

/** A token as the table keeps it (the only place a token item is built). */
interface TokenFields {
  hash: string;
  userId: number;
  abilities: string[];
  expiresAt: string | null;
  name?: string;
  /** Laravel Sanctum's id, for a migrated token. */
  sanctumId?: number;
  /** When it was made: Sanctum's `created_at` for a migrated token, else when this table got it. */
  createdAt: string;
  /** `<team id>#<members generation>` entries of its user's teams. */
  memberships?: ReadonlySet<string>;
}

export function tokenItem(token: TokenFields) {
  return {
    ...tokenKey(token.hash),
    user_id: token.userId,
    abilities: token.abilities,
    expires_at: token.expiresAt,
    ...(token.name !== undefined && { name: token.name }),
    ...(token.sanctumId !== undefined && { sanctum_id: token.sanctumId }),
    created_at: token.createdAt,
    ...(token.memberships && token.memberships.size > 0 && { memberships: new Set(token.memberships) }),
  };
}

/** A token as a writer reads it back. */
export interface StoredToken {
  userId: number;
  abilities: string[];
  expiresAt: string | null;
  name?: string;
  sanctumId?: number;
  createdAt?: string;
  revokedAt?: string;
}

export function readToken(item: Record<string, unknown>): StoredToken {
  return {
    userId: Number(item.user_id),
    abilities: (item.abilities as string[] | undefined) ?? [],
    expiresAt: (item.expires_at as string | null | undefined) ?? null,
    name: item.name as string | undefined,
    sanctumId: item.sanctum_id === undefined ? undefined : Number(item.sanctum_id),
    createdAt: item.created_at as string | undefined,
    revokedAt: item.revoked_at as string | undefined,
  };
}

/** The Sanctum id's index item: which token holds the id, and that token's fingerprint as the source gave it. */
export function sanctumIndexItem(sanctumId: number, hash: string, userId: number, fingerprint: string) {
  return { ...sanctumKey(sanctumId), sanctum_id: sanctumId, hash, user_id: userId, fingerprint };
}

export const userTokenItem = (userId: number, hash: string) => userTokenKey(userId, hash);

/** A team's record, as a writer reads it; the lists come from their heads (readListPart). */
export function readTeamRecord(item: Record<string, unknown>): Omit<TeamState, 'lists'> {
  return {
    identity: {
      id: Number(item.team_id),
      ...(item.slug !== undefined && { slug: String(item.slug) }),
      name: String(item.name),
    },
    revision: Number(item.revision),
    membersGeneration: String(item.members_generation),
    membersFingerprint: String(item.members_fingerprint ?? ''),
    financeFingerprint: String(item.finance_fingerprint ?? ''),
  };
}

/** A list's head, as a writer reads it. */
export function readListPart(item: Record<string, unknown>): ListPart {
  const revision = Number(item.revision);
  const overlay = item.overlay as Uint8Array | undefined;
  return {
    layout: {
      generation: String(item.generation),
      count: Number(item.count),
      base: Number(item.base),
      revision,
      entries: decodeOverlay(overlay, revision),
    },
    fingerprint: String(item.fingerprint),
  };
}

function longerRef(team: TeamIdentity): string | number {
  if (team.slug === undefined) return team.id;
  return String(team.id).length > team.slug.length ? String(team.id) : team.slug;
}
