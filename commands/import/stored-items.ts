import { randomBytes } from 'node:crypto';
import {
  importLockKey, memberKey, ordinalKey, pendingKey, generationPartition, retiredKey, teamFinanceKey, teamHeadKey,
} from '../store/keys.ts';
import type { ListResource } from '../../shared/domain/resources.ts';
import { itemSize } from '../store/item-size.ts';

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
export function headItem(team: TeamIdentity, ref: string | number, generation: string, counts: Record<ListResource, number>) {
  return { ...teamHeadKey(ref), team_id: team.id, slug: team.slug, name: team.name, generation, projects: counts.projects, daemons: counts.daemons };
}

/** A team's finance summary (both copies): what a finances request reads. */
export function financeItem(team: TeamIdentity, fieldsJson: string, ref: string | number = longerRef(team), generation = LONGEST_GENERATION) {
  return { ...teamFinanceKey(ref), team_id: team.id, generation, finance: fieldsJson };
}

export function resourceItem(teamId: number, generation: string, resource: ListResource, ordinal: number, json: string) {
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

/** The most actions one team's switch takes: 2 heads, 2 finance items, 2 deletes of an old slug's copies, 2 ledger entries, the lock check. */
export const SWITCH_ACTIONS_MAX = 9;

/** The bytes one team's switch writes in its transaction, at most (a generous bound of every item in it). */
export function switchTransactionBytes(team: TeamIdentity, fieldsJson: string): number {
  const counts = { projects: Number.MAX_SAFE_INTEGER, daemons: Number.MAX_SAFE_INTEGER };
  const head = itemSize(headItem(team, longerRef(team), LONGEST_GENERATION, counts));
  const finance = itemSize(financeItem(team, fieldsJson));
  const ledger = itemSize(retiredItem(team.id, LONGEST_GENERATION, Number.MAX_SAFE_INTEGER)) + itemSize(pendingItem(team.id, LONGEST_GENERATION, Number.MAX_SAFE_INTEGER));
  const lock = 1_024;
  return 4 * head + 2 * finance + ledger + lock;
}

function longerRef(team: TeamIdentity): string {
  return String(team.id).length > team.slug.length ? String(team.id) : team.slug;
}

export { importLockKey };
