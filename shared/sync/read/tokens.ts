import { checkRecord } from '../../domain/records.ts';
import { toUtcTimestamp } from '../../domain/timestamp.ts';
import type { DesiredToken } from '../../write/desired.ts';
import type { Mapping } from '../mapping.ts';
import type { Refusal } from '../refusals.ts';
import type { Row, SourceConnection } from '../source/connection.ts';
import { sourceId } from './team.ts';
import { sourceTime } from './times.ts';

/**
 * Tokens of the source (Sanctum's personal_access_tokens, by the mapping's tokens query), as the
 * snapshot's rules judge a migrated token (docs/contract.md, sections 6, 7 and 9): by its hash,
 * with its Sanctum id, abilities (Sanctum's JSON list; NULL: none) and expiry. A token whose user
 * is not in the source is no token (Sanctum finds no tokenable for it): it goes, as a deleted one;
 * so does a token the rules refuse (fail closed: a bad token row never keeps a right).
 */
export interface SourceTokens {
  /** The tokens that are there and keep every rule. */
  tokens: DesiredToken[];
  /** Sanctum ids asked for that are no (valid) token any more: removed here. */
  gone: number[];
  refusals: Refusal[];
}

// Every column of the tokens query: `created_at` is read where the query has it (Laravel's has).
const COLUMNS = 't.*, u.id AS found_user';

/** The tokens with these Sanctum ids, or those of these users. */
export async function readTokens(
  source: SourceConnection,
  mapping: Mapping,
  timezone: string,
  by: { ids: number[] } | { userIds: number[] },
): Promise<SourceTokens> {
  const asked = 'ids' in by ? by.ids : by.userIds;
  const result: SourceTokens = { tokens: [], gone: [], refusals: [] };
  if (asked.length === 0) return result;
  const column = 'ids' in by ? 't.id' : 't.user_id';
  const rows = await source.query(
    `SELECT ${COLUMNS} FROM (${mapping.queries.tokens}) t LEFT JOIN (${mapping.queries.users}) u ON u.id = t.user_id
     WHERE ${column} IN (${asked.map(() => '?').join(', ')})`,
    asked,
  );
  const found = new Set<number>();
  for (const row of rows) {
    const token = judgeToken(row, timezone, result.refusals);
    // A token the rules refuse is no token here (it is said once): kept as it was, it could keep a
    // right the source has taken away. Fixed, it comes back.
    if (token && token !== 'refused') {
      found.add(token.sanctumId!);
      result.tokens.push(token);
    }
  }
  if ('ids' in by) result.gone = by.ids.filter((id) => !found.has(id));
  return result;
}

/** Every token of the source, in id order, a batch at a time. */
export async function streamTokens(
  source: SourceConnection,
  mapping: Mapping,
  timezone: string,
  onToken: (token: DesiredToken | 'refused', id: number) => void | Promise<void>,
  refusals: Refusal[],
): Promise<void> {
  await source.stream(
    `SELECT ${COLUMNS} FROM (${mapping.queries.tokens}) t LEFT JOIN (${mapping.queries.users}) u ON u.id = t.user_id
     ORDER BY t.id`,
    [],
    async (row) => {
      const token = judgeToken(row, timezone, refusals);
      if (token) await onToken(token, Number(row.id));
    },
  );
}

/** A token row as the rules judge it; undefined when its user is gone; 'refused' when a rule refuses it. */
function judgeToken(row: Row, timezone: string, refusals: Refusal[]): DesiredToken | 'refused' | undefined {
  if (row.found_user === null) return undefined;
  let abilities: unknown = [];
  if (row.abilities !== null) {
    try {
      abilities = JSON.parse(String(row.abilities));
    } catch {
      abilities = row.abilities; // not JSON: the rules say what it should be
    }
  }
  // Sanctum decodes the column to a PHP array and looks among its values (in_array): a list that PHP
  // wrote after array_diff or unset is a JSON object, {"1":"projects:read"}, and means its values.
  // JSON null is no abilities.
  if (abilities === null) abilities = [];
  else if (typeof abilities === 'object' && !Array.isArray(abilities)) abilities = Object.values(abilities);
  const checked = checkRecord('tokens', {
    id: sourceId(row.id),
    user_id: sourceId(row.user_id),
    token_sha256: row.token,
    name: row.name,
    abilities,
    expires_at: row.expires_at === null ? null : sourceTime(String(row.expires_at), timezone),
  });
  if (!checked.ok) {
    for (const problem of checked.problems) {
      refusals.push({ collection: 'tokens', id: String(row.id), problem, teamId: 0, part: 'token' });
    }
    return 'refused';
  }
  const { record } = checked;
  const createdAt =
    row.created_at === null || row.created_at === undefined
      ? undefined
      : toUtcTimestamp(sourceTime(String(row.created_at), timezone));
  return {
    where: `tokens ${record.id}`,
    hash: record.token_sha256!,
    userId: record.user_id!,
    sanctumId: record.id!,
    name: record.name,
    abilities: [...new Set(record.abilities!)],
    expiresAt: record.expires_at ?? null,
    // Sanctum's own time of the token (`token list` shows it); a time the rules cannot read is left out.
    ...(createdAt !== undefined && { createdAt }),
  };
}
