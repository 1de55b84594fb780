import { GetCommand } from '@aws-sdk/lib-dynamodb';
import {
  generationPartition,
  type Key,
  type ListResource,
  ledgerPartitions,
  importLeaseKey,
  pendingRange,
  replacedUntil,
  retiredUntil,
  syncLeaseKey,
} from '../table/keys.ts';
import { allPlacedItems } from '../table/list-layout.ts';
import type { ListPart } from './items.ts';
import { listHashDeletions } from './list-hashes.ts';
import { queryAll, queryPages } from './reads.ts';
import { bulkRef, deleteRequest, requestWriter, type TableRef, type Writer, writeRequests } from './writer.ts';

/**
 * What writes leave behind, and when it goes (docs/contract.md, sections 7 and 9; docs/storage.md).
 * The ledger (shared/table/keys.ts) records:
 *
 * - a generation of a part while it is pending (reserved by a writer, not yet switched to), with the
 *   writer that reserved it;
 * - a generation once retired (replaced by a switch), and the versions of a list's items that one
 *   change replaced, each with the time of the switch.
 *
 * What was replaced stays readable at least 5 minutes, however many writes follow (a request runs for
 * seconds), and goes with the first sweep after that. A pending generation whose writer is no longer
 * running (its import's or sync's lease is gone) goes at once: no reader ever used it.
 */
const RETENTION_MS = 5 * 60_000;
/** A minute more than the contract's 5, for the clocks of two machines that disagree a little. */
export const SWEEP_AFTER_MS = RETENTION_MS + 60_000;

type Entry = Key & Record<string, unknown>;

/** Every ledger entry in a sort-key range, over all the ledger's shards. */
async function entries(table: TableRef, range: { from: string; to: string }): Promise<Entry[]> {
  const shards = await Promise.all(ledgerPartitions().map((pk) => queryAll(table.doc, table.tableName, pk, { range })));
  return shards.flat();
}

/** Deletes a generation's partition, a page of keys at a time (never all in memory), then its entry. */
async function deleteGeneration(table: TableRef, entry: Entry): Promise<void> {
  const batch = requestWriter(bulkRef(table));
  const partition = generationPartition(Number(entry.team_id), String(entry.generation), entry.part as never);
  for await (const page of queryPages(table.doc, table.tableName, partition, { keysOnly: true })) {
    for (const key of page) await batch.add(deleteRequest(key));
  }
  if (entry.part !== 'MEMBER') {
    const hashes = await listHashDeletions(table, Number(entry.team_id), String(entry.generation), entry.part as never);
    for (const request of hashes) await batch.add(request);
  }
  await batch.flush();
  await writeRequests(table, [deleteRequest(entry)]);
}

/** Deletes the versions a change replaced, then their entry. */
async function deleteVersions(table: TableRef, entry: Entry): Promise<void> {
  const partition = generationPartition(Number(entry.team_id), String(entry.generation), entry.part as ListResource);
  const keys = (entry.keys as string[] | undefined) ?? [];
  await writeRequests(table, [...keys.map((sk) => deleteRequest({ pk: partition, sk })), deleteRequest(entry)]);
}

/** The owners of the leases that are held now: the import's and the sync's. */
async function liveOwners(table: TableRef): Promise<Set<string>> {
  const owners = new Set<string>();
  for (const key of [importLeaseKey(), syncLeaseKey()]) {
    const { Item } = await table.doc.send(
      new GetCommand({ TableName: table.tableName, Key: key, ConsistentRead: true }),
    );
    if (Item && Number(Item.expires_at) > Date.now()) owners.add(String(Item.lock_owner));
  }
  return owners;
}

/** Generations pending for writers that no longer run: no reader ever used them. */
export async function clearDeadWriters(writer: Writer): Promise<void> {
  const pending = await entries(writer, pendingRange());
  if (pending.length === 0) return;
  const live = await liveOwners(writer);
  live.add(writer.owner);
  for (const entry of pending) if (!live.has(String(entry.owner))) await deleteGeneration(writer, entry);
}

/** Deletes what was replaced long enough ago (`now` in wall-clock ms); returns how many entries went. */
export async function sweepReplaced(table: TableRef, now: number): Promise<number> {
  const until = now - SWEEP_AFTER_MS;
  const generations = await entries(table, retiredUntil(until));
  for (const entry of generations) await deleteGeneration(table, entry);
  const versions = await entries(table, replacedUntil(until));
  for (const entry of versions) await deleteVersions(table, entry);
  return generations.length + versions.length;
}

/**
 * Items of a list's generation that no head names and no entry of the ledger will sweep: left by a
 * writer that died between writing them and switching to them. Looked for only where a team's lock
 * was taken over from such a writer; the keys a head replaced in the last minutes stay (their entry
 * sweeps them).
 */
export async function clearOrphanVersions(writer: Writer, teamId: number, list: ListResource, part: ListPart) {
  const { generation } = part.layout;
  const named = new Set(allPlacedItems(part.layout).map((item) => item.key));
  for (const entry of await entries(writer, replacedUntil(Number.MAX_SAFE_INTEGER))) {
    if (Number(entry.team_id) === teamId && entry.generation === generation && entry.part === list)
      for (const key of (entry.keys as string[]) ?? []) named.add(key);
  }
  const batch = requestWriter(writer, () => writer.locks.assertHeld(teamId));
  for await (const page of queryPages(writer.doc, writer.tableName, generationPartition(teamId, generation, list), {
    keysOnly: true,
  })) {
    for (const key of page) if (!named.has(key.sk)) await batch.add(deleteRequest(key));
  }
  await batch.flush();
}
