import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LIST_RESOURCES } from '../../shared/routes.ts';
import {
  memberPartition,
  membershipEntry,
  memberUserIdOf,
  pendingRange,
  pendingTokensRange,
  generationPartition,
  retiredUntil,
  tokenKey,
  userTokenKey,
  type Key,
} from '../../shared/store/keys.ts';
import { batchWriter, writeAll } from '../store/batch-write.ts';
import { forEachConcurrently } from '../store/concurrently.ts';
import { changeUsersMemberships, ledgerEntries, queryAll, queryPages } from '../store/memberships.ts';

/**
 * What an import leaves behind, and when it goes (docs/contract.md, section 7; docs/storage.md).
 * The ledger (commands/store/keys.ts) records each generation while it is pending (reserved, not yet
 * switched to) and once retired (replaced, with the time), and each token written inactive.
 *
 * - Membership entries of a retired generation leave right after the switch (and, for an import
 *   killed before it got there, at the start of the next): a token holds one entry per team of its
 *   user, whatever the import history. A reader that still sees the old head re-reads strongly.
 * - A retired generation's items stay readable at least 5 minutes, however many imports follow
 *   (a request runs for seconds), and are deleted by the first import after that.
 * - Pending generations and inactive tokens found by an import that holds the lock belong to an
 *   import that died: no reader ever used them, and they go at once.
 */
const RETENTION_MS = 5 * 60_000;
/** A minute more than the contract's 5, for the clocks of two machines that disagree a little. */
const SWEEP_AFTER_MS = RETENTION_MS + 60_000;

type Entry = Key & Record<string, unknown>;

/** The retention work of one import; `beforeWrite` (the import lock's check) runs before each write and may throw to stop it. */
export function importRetention(doc: DynamoDBDocumentClient, tableName: string, beforeWrite: () => void) {
  const ledger = (range: { from: string; to: string }) => ledgerEntries(doc, tableName, range);

  /** Deletes these items (in one batch: a token with its index entry, or a ledger entry alone). */
  const deleteItems = (...keys: Key[]) =>
    writeAll(
      doc,
      tableName,
      keys.map(({ pk, sk }) => ({ DeleteRequest: { Key: { pk, sk } } })),
      { beforeSend: beforeWrite },
    );

  /** Removes the entries of these generations from their members' tokens, grouped by user. */
  async function removeEntries(generations: Entry[]): Promise<void> {
    const entriesByUser = new Map<number, string[]>();
    await forEachConcurrently(generations, async ({ team_id, generation }) => {
      const entry = membershipEntry(Number(team_id), String(generation));
      const members = await queryAll(doc, tableName, memberPartition(Number(team_id), String(generation)), {
        keysOnly: true,
      });
      for (const userId of members.map(memberUserIdOf))
        entriesByUser.set(userId, [...(entriesByUser.get(userId) ?? []), entry]);
    });
    await changeUsersMemberships(doc, tableName, entriesByUser, 'DELETE', beforeWrite);
  }

  /** One generation whose entries are removed: its member index, its items, then its ledger entry (so an interrupted delete is finished later). */
  async function deleteGeneration(entry: Entry): Promise<void> {
    const teamId = Number(entry.team_id);
    const generation = String(entry.generation);
    const writer = batchWriter(doc, tableName, { beforeSend: beforeWrite });
    for (const partition of [
      memberPartition(teamId, generation),
      ...LIST_RESOURCES.map((resource) => generationPartition(teamId, generation, resource)),
    ]) {
      // A page of keys at a time: a generation of millions of items is never held in memory.
      for await (const page of queryPages(doc, tableName, partition, { keysOnly: true })) {
        for (const Key of page) await writer.add({ DeleteRequest: { Key } });
      }
    }
    await writer.flush();
    await deleteItems(entry);
  }

  /** Removes the membership entries of every retired generation not yet cleared of them. */
  async function removeReplacedEntries(): Promise<void> {
    const retired = (await ledger(retiredUntil(Number.MAX_SAFE_INTEGER))).filter((entry) => !entry.cleared);
    await removeEntries(retired);
    await writeAll(
      doc,
      tableName,
      retired.map((entry) => ({ PutRequest: { Item: { ...entry, cleared: true } } })),
      { beforeSend: beforeWrite },
    );
  }

  return {
    /** What dead imports left: their generations, their inactive tokens, the entries they did not remove. */
    async clearDeadImports(): Promise<void> {
      const pending = await ledger(pendingRange());
      await removeEntries(pending);
      for (const entry of pending) await deleteGeneration(entry);
      for (const entry of await ledger(pendingTokensRange())) {
        const hash = String(entry.sk).slice(2);
        const token = (
          await doc.send(new GetCommand({ TableName: tableName, Key: tokenKey(hash), ConsistentRead: true }))
        ).Item;
        // Activated just before its import died: valid, and kept.
        if (!token || token.inactive) await deleteItems(userTokenKey(Number(entry.user_id), hash), tokenKey(hash));
        await deleteItems(entry);
      }
      await removeReplacedEntries();
    },
    removeReplacedEntries,
    /** Deletes generations retired long enough ago (`now` in wall-clock ms): removeReplacedEntries has removed their entries. */
    async sweepRetired(now: number): Promise<void> {
      for (const entry of await ledger(retiredUntil(now - SWEEP_AFTER_MS))) await deleteGeneration(entry);
    },
  };
}
