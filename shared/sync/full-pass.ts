import { sanctumPartitions, TEAMS_PARTITION } from '../table/keys.ts';
import { tokenFingerprint } from '../write/plan-tokens.ts';
import { queryAll } from '../write/reads.ts';
import type { TableRef } from '../write/writer.ts';
import type { ChangePart, Mapping } from './mapping.ts';
import { streamTokens } from './read/tokens.ts';
import type { Refusal } from './refusals.ts';
import type { SourceConnection } from './source/connection.ts';
import { Touched } from './touches.ts';

/**
 * A full pass (docs/contract.md, section 9): every team and token of the source against the table, for
 * what the log could not give (a first load, a slot lost, a binlog purged, a cascade MySQL does not
 * log). It reads nothing itself but which teams and tokens there are: it hands them on as touches,
 * a few teams at a time, to the same batches as the log's changes (batch.ts), so that a change
 * committed meanwhile waits for one batch at most, and a team is never written from a read older than
 * one the log's changes made.
 */

/** Teams a full pass hands on at once: read together in one snapshot, written as one plan. */
const TEAMS_PER_BATCH = 20;
/** Tokens a full pass hands on at once. */
const TOKENS_PER_BATCH = 500;

export interface FullPassProgress {
  teams: { done: number; total: number };
  tokens: { done: number; total: number };
}

/**
 * Hands every team (the parts asked, all by default) and every token that differs to `apply`, a batch
 * at a time; stops between batches when `stopped` says so. Returns the token rows the rules refused.
 */
export async function fullPass(
  source: SourceConnection,
  mapping: Mapping,
  timezone: string,
  table: TableRef,
  apply: (touched: Touched) => Promise<void>,
  options: {
    parts?: readonly ChangePart[];
    stopped?: () => boolean;
    onProgress?: (progress: FullPassProgress) => void;
  } = {},
): Promise<Refusal[]> {
  const parts = (options.parts ?? ['team', 'members', 'projects', 'daemons', 'finance']).filter(
    (part) => part !== 'user' && part !== 'token',
  ) as Exclude<ChangePart, 'user' | 'token'>[];
  const inSource = (await source.query(`SELECT q.id FROM (${mapping.queries.teams}) q ORDER BY q.id`)).map((row) =>
    Number(row.id),
  );
  const inTable = (await queryAll(table.doc, table.tableName, TEAMS_PARTITION, { keysOnly: true })).map((key) =>
    Number(key.sk),
  );
  const teamIds = [...new Set([...inSource, ...inTable])].sort((a, b) => a - b);
  const progress: FullPassProgress = { teams: { done: 0, total: teamIds.length }, tokens: { done: 0, total: 0 } };
  options.onProgress?.(progress);
  /** Hands `ids` on `size` at a time, counting them `done`; false when stopped before the last. */
  const inBatches = async (
    ids: number[],
    size: number,
    done: { done: number },
    add: (t: Touched, id: number) => void,
  ) => {
    for (let next = 0; next < ids.length; next += size) {
      if (options.stopped?.()) return false;
      const touched = new Touched();
      for (const id of ids.slice(next, next + size)) add(touched, id);
      await apply(touched);
      done.done = Math.min(next + size, ids.length);
      options.onProgress?.(progress);
    }
    return true;
  };
  const all = await inBatches(teamIds, TEAMS_PER_BATCH, progress.teams, (touched, teamId) => {
    for (const part of parts) touched.team(teamId, part);
  });
  if (!all || (options.parts && !options.parts.includes('members'))) return [];

  // Tokens: each Sanctum id's item keeps the fingerprint of the token as the source last gave it, so
  // one Query a shard compares them all; only those that differ, or are gone, are read again.
  const index = new Map<number, string>();
  for (const partition of sanctumPartitions()) {
    for (const item of await queryAll(table.doc, table.tableName, partition)) {
      index.set(Number(item.sanctum_id), String(item.fingerprint));
    }
  }
  const differing: number[] = [];
  const seen = new Set<number>();
  const refusals: Refusal[] = [];
  await streamTokens(
    source,
    mapping,
    timezone,
    (token, id) => {
      // A refused token is not seen: it goes (read/tokens.ts).
      if (token === 'refused') return;
      seen.add(id);
      if (index.get(id) !== tokenFingerprint(token)) differing.push(id);
    },
    refusals,
  );
  const ids = [...differing, ...[...index.keys()].filter((id) => !seen.has(id))];
  progress.tokens.total = ids.length;
  await inBatches(ids, TOKENS_PER_BATCH, progress.tokens, (touched, id) => touched.tokens.add(id));
  return refusals;
}
