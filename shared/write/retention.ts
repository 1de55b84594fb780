import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { forEachConcurrently } from './concurrently.ts';
import { LIST_RESOURCES } from '../table/keys.ts';
import {
  type GenerationPart,
  generationPartition,
  type Key,
  memberPartition,
  membershipEntry,
  memberUserIdOf,
  pendingRange,
  pendingTokensRange,
  retiredUntil,
  tokenKey,
  userTokenKey,
} from '../table/keys.ts';
import { changeMemberships, listUserTokens } from './memberships.ts';
import { ledgerEntries, queryAll, queryPages } from './reads.ts';
import { deleteRequest, putRequest, requestWriter, type Writer, writeRequests } from './writer.ts';

/**
 * What a write leaves behind, and when it goes (docs/contract.md, sections 7 and 9; docs/storage.md).
 * The ledger (shared/table/keys.ts) records each generation of a part while it is pending (reserved,
 * not yet switched to) and once retired (replaced, with the time), and each token written inactive.
 *
 * - A retired generation's items stay readable at least 5 minutes, however many writes follow
 *   (a request runs for seconds), and are deleted by the first write after that.
 * - Pending generations and inactive tokens found by a writer that holds the lock belong to a
 *   writer that died: no reader ever used them, and they go at once.
 */
const RETENTION_MS = 5 * 60_000;
/** A minute more than the contract's 5, for the clocks of two machines that disagree a little. */
export const SWEEP_AFTER_MS = RETENTION_MS + 60_000;

type Entry = Key & Record<string, unknown>;

/**
 * The partitions of a ledger entry's generation: its part's; or, for an entry written before parts
 * had generations of their own (no `part`), the whole generation's.
 */
function partitionsOf(entry: Entry): string[] {
  const teamId = Number(entry.team_id);
  const generation = String(entry.generation);
  const parts: GenerationPart[] = entry.part ? [entry.part as GenerationPart] : [...LIST_RESOURCES, 'MEMBER'];
  return parts.map((part) => generationPartition(teamId, generation, part));
}

/**
 * Deletes a ledger entry's partitions, a page of keys at a time, then the entry (so an interrupted
 * delete is finished later).
 */
async function deleteGeneration(w: Writer, entry: Entry): Promise<void> {
  const writer = requestWriter(w);
  for (const partition of partitionsOf(entry)) {
    // A generation of millions of items is never held in memory.
    for await (const page of queryPages(w.doc, w.tableName, partition, { keysOnly: true })) {
      for (const key of page) await writer.add(deleteRequest(key));
    }
  }
  await writer.flush();
  await writeRequests(w, [deleteRequest(entry)]);
}

/**
 * An entry from before parts had generations of their own, whose writer died before it took the
 * entries of the replaced generation off its members' tokens: they go now.
 */
async function clearLegacyEntries(w: Writer, entry: Entry): Promise<void> {
  const teamId = Number(entry.team_id);
  const generation = String(entry.generation);
  const members = await queryAll(w.doc, w.tableName, memberPartition(teamId, generation), { keysOnly: true });
  await forEachConcurrently(members.map(memberUserIdOf), async (userId) => {
    for (const hash of await listUserTokens(w, userId)) {
      w.lock.assertHeld();
      await changeMemberships(w, hash, 'DELETE', [membershipEntry(teamId, generation)]);
    }
  });
  await writeRequests(w, [putRequest({ ...entry, cleared: true })]);
}

/** What dead writers left: their pending generations and their inactive tokens. */
export async function clearDeadWriters(w: Writer): Promise<void> {
  const ledger = (range: { from: string; to: string }) => ledgerEntries(w.doc, w.tableName, range);
  for (const entry of await ledger(pendingRange())) await deleteGeneration(w, entry);
  for (const entry of await ledger(pendingTokensRange())) {
    const hash = String(entry.sk).slice(2);
    const { Item: token } = await w.doc.send(
      new GetCommand({ TableName: w.tableName, Key: tokenKey(hash), ConsistentRead: true }),
    );
    // Activated just before its writer died: valid, and kept.
    if (!token || token.inactive) {
      await writeRequests(w, [userTokenKey(Number(entry.user_id), hash), tokenKey(hash)].map(deleteRequest));
    }
    await writeRequests(w, [deleteRequest(entry)]);
  }
  const uncleared = (await ledger(retiredUntil(Number.MAX_SAFE_INTEGER))).filter((e) => !e.part && !e.cleared);
  for (const entry of uncleared) await clearLegacyEntries(w, entry);
}

/** Deletes the generations retired long enough ago (`now` in wall-clock ms). */
export async function sweepRetired(w: Writer, now: number): Promise<number> {
  const due = await ledgerEntries(w.doc, w.tableName, retiredUntil(now - SWEEP_AFTER_MS));
  for (const entry of due) await deleteGeneration(w, entry);
  return due.length;
}
