import { randomBytes } from 'node:crypto';
import {
  memberKey,
  ordinalKey,
  pendingKey,
  generationPartition,
  retiredKey,
  teamFinanceKey,
  teamHeadKey,
} from '../../shared/store/keys.ts';
import type { ListResource } from '../../shared/routes.ts';

/**
 * The items an import writes, shaped in one place: validation measures them (in bytes, as
 * DynamoDB does) with the same functions the importer writes them with.
 */

export interface TeamIdentity {
  id: number;
  slug: string;
  name: string;
}

/** Generation ids: the time in base 36 (8 characters until 2059) and 8 random hex digits. */
export const GENERATION_ID_LENGTH = 16;
export function newGenerationId(now: number): string {
  return now.toString(36).padStart(8, '0').slice(-8) + randomBytes(4).toString('hex');
}
const LONGEST_GENERATION = 'g'.repeat(GENERATION_ID_LENGTH);

/** A team head (both copies have these attributes): what every list request reads. Small. */
export function headItem(
  team: TeamIdentity,
  ref: string | number,
  generation: string,
  counts: Record<ListResource, number>,
) {
  return {
    ...teamHeadKey(ref),
    team_id: team.id,
    slug: team.slug,
    name: team.name,
    generation,
    projects: counts.projects,
    daemons: counts.daemons,
  };
}

/** A team's finance summary (both copies): what a finances request reads. */
export function financeItem(
  team: TeamIdentity,
  fieldsJson: string,
  ref: string | number = longerRef(team),
  generation = LONGEST_GENERATION,
) {
  return { ...teamFinanceKey(ref), team_id: team.id, generation, finance: fieldsJson };
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

export function memberItem(teamId: number, generation: string, userId: number) {
  return { ...memberKey(teamId, generation, userId), user_id: userId };
}

export function pendingItem(teamId: number, generation: string, reservedAtMs: number) {
  return { ...pendingKey(teamId, generation), team_id: teamId, generation, reserved_at: reservedAtMs };
}

export function retiredItem(teamId: number, generation: string, retiredAtMs: number) {
  return { ...retiredKey(teamId, generation, retiredAtMs), team_id: teamId, generation, retired_at: retiredAtMs };
}

function longerRef(team: TeamIdentity): string {
  return String(team.id).length > team.slug.length ? String(team.id) : team.slug;
}
