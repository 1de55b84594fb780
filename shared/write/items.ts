import { randomBytes } from 'node:crypto';
import type { ListResource } from '../table/keys.ts';
import {
  type GenerationPart,
  generationPartition,
  memberKey,
  ordinalKey,
  pendingKey,
  retiredKey,
  teamFinanceKey,
  teamHeadKey,
  teamListKey,
} from '../table/keys.ts';

/**
 * The items the writers (import and sync) write, shaped in one place: the import's validation
 * measures them (in bytes, as DynamoDB does) with the same functions the writers write them with,
 * and `readHead` is the one reading of a head for a writer.
 */

export interface TeamIdentity {
  id: number;
  slug: string;
  name: string;
}

/** One list of a team as stored: the generation readers use, its item count and its content's fingerprint. */
export interface ListPart {
  generation: string;
  count: number;
  fingerprint: string;
}

/**
 * A team head as a writer reads and writes it (both copies hold the same). `revision` grows with
 * every switch: a switch is conditioned on the revision it planned from, so two writers can never
 * interleave within a team. Fingerprints say what each part holds, so that a writer compares a
 * part with what it would write without reading its items back (shared/write/fingerprint.ts).
 */
export interface HeadState {
  identity: TeamIdentity;
  revision: number;
  projects: ListPart;
  daemons: ListPart;
  /** The members generation: the tag of every membership entry of the team. */
  membersGeneration: string;
  membersFingerprint: string;
  financeFingerprint: string;
}

/** Generation ids: the time in base 36 (8 characters until 2059) and 8 random hex digits. */
export const GENERATION_ID_LENGTH = 16;
export function newGenerationId(now: number): string {
  return now.toString(36).padStart(8, '0').slice(-8) + randomBytes(4).toString('hex');
}
const LONGEST_GENERATION = 'g'.repeat(GENERATION_ID_LENGTH);

/** A team head (each copy): what every list request reads. Small: a few ids, counts and fingerprints. */
export function headItem(ref: string | number, head: HeadState) {
  const { identity, projects, daemons } = head;
  return {
    ...teamHeadKey(ref),
    team_id: identity.id,
    slug: identity.slug,
    name: identity.name,
    revision: head.revision,
    projects_generation: projects.generation,
    projects: projects.count,
    projects_fingerprint: projects.fingerprint,
    daemons_generation: daemons.generation,
    daemons: daemons.count,
    daemons_fingerprint: daemons.fingerprint,
    members_generation: head.membersGeneration,
    members_fingerprint: head.membersFingerprint,
    finance_fingerprint: head.financeFingerprint,
  };
}

/**
 * A head as stored, for a writer. A head written before parts had generations of their own holds
 * one `generation` for all of them, no revision and no fingerprints: it reads as revision 0 whose
 * fingerprints match nothing, so the next write of the team writes every part once.
 */
export function readHead(item: Record<string, unknown>): HeadState {
  const legacy = item.generation as string | undefined;
  const list = (part: ListResource): ListPart => ({
    generation: String(item[`${part}_generation`] ?? legacy),
    count: Number(item[part] ?? 0),
    fingerprint: String(item[`${part}_fingerprint`] ?? ''),
  });
  return {
    identity: { id: Number(item.team_id), slug: String(item.slug), name: String(item.name) },
    revision: Number(item.revision ?? 0),
    projects: list('projects'),
    daemons: list('daemons'),
    membersGeneration: String(item.members_generation ?? legacy),
    membersFingerprint: String(item.members_fingerprint ?? ''),
    financeFingerprint: String(item.finance_fingerprint ?? ''),
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

export function resourceItem(
  teamId: number,
  generation: string,
  resource: ListResource,
  ordinal: number,
  json: string,
) {
  return { pk: generationPartition(teamId, generation, resource), sk: ordinalKey(ordinal), j: json };
}

export function memberItem(teamId: number, membersGeneration: string, userId: number) {
  return { ...memberKey(teamId, membersGeneration, userId), user_id: userId };
}

/** The table's list of its teams: one small item per team, written with the team's first head. */
export function teamListItem(teamId: number) {
  return { ...teamListKey(teamId), team_id: teamId };
}

export function pendingItem(teamId: number, generation: string, part: GenerationPart, reservedAtMs: number) {
  return { ...pendingKey(teamId, generation, part), team_id: teamId, generation, part, reserved_at: reservedAtMs };
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

function longerRef(team: TeamIdentity): string {
  return String(team.id).length > team.slug.length ? String(team.id) : team.slug;
}
