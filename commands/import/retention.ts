import { DeleteCommand, GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LIST_RESOURCES } from '../../shared/domain/resources.ts';
import {
  memberPartition, membershipEntry, memberUserIdOf, pendingRange, pendingTokensRange, generationPartition, retiredUntil, tokenKey, userTokenKey, type Key,
} from '../store/keys.ts';
import { BatchWriter, writeAll } from '../store/batch-write.ts';
import { forEachConcurrently } from '../store/concurrently.ts';
import { changeUsersMemberships, ledgerEntries, queryPages } from '../store/memberships.ts';

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

export class Retention {
  private readonly doc: DynamoDBDocumentClient;
  private readonly tableName: string;
  /** Called before each write: the import lock's check. */
  private readonly beforeWrite: () => void;

  constructor(doc: DynamoDBDocumentClient, tableName: string, beforeWrite: () => void) {
    this.doc = doc;
    this.tableName = tableName;
    this.beforeWrite = beforeWrite;
  }

  /** What dead imports left: their generations, their inactive tokens, the entries they did not remove. */
  async clearDeadImports(): Promise<void> {
    for (const entry of await ledgerEntries(this.doc, this.tableName, pendingRange())) await this.deleteGeneration(entry);
    for (const entry of await ledgerEntries(this.doc, this.tableName, pendingTokensRange())) {
      const hash = String(entry.sk).slice(2);
      const token = (await this.doc.send(new GetCommand({ TableName: this.tableName, Key: tokenKey(hash), ConsistentRead: true }))).Item;
      // Activated just before its import died: valid, and kept.
      if (!token || token.inactive) await this.delete(userTokenKey(Number(entry.user_id), hash), tokenKey(hash));
      await this.delete(entry);
    }
    await this.removeReplacedEntries();
  }

  /** Removes the membership entries of every retired generation not yet cleared of them, grouped by user. */
  async removeReplacedEntries(): Promise<void> {
    const retired = await ledgerEntries(this.doc, this.tableName, retiredUntil(Number.MAX_SAFE_INTEGER), 'attribute_not_exists(cleared)');
    const entriesByUser = new Map<number, string[]>();
    await forEachConcurrently(retired, 16, async ({ team_id, generation }) => {
      for await (const page of queryPages(this.doc, this.tableName, memberPartition(Number(team_id), String(generation)), { keysOnly: true })) {
        for (const member of page) entriesByUser.set(memberUserIdOf(member), [...(entriesByUser.get(memberUserIdOf(member)) ?? []), membershipEntry(Number(team_id), String(generation))]);
      }
    });
    await changeUsersMemberships(this.doc, this.tableName, entriesByUser, 'DELETE', this.beforeWrite);
    await writeAll(this.doc, this.tableName, retired.map((entry) => ({ PutRequest: { Item: { ...entry, cleared: true } } })), { beforeSend: this.beforeWrite });
  }

  /** Deletes generations retired long enough ago (`now` in wall-clock ms); returns how many. */
  async sweepRetired(now: number): Promise<number> {
    const expired = await ledgerEntries(this.doc, this.tableName, retiredUntil(now - SWEEP_AFTER_MS));
    for (const entry of expired) await this.deleteGeneration(entry);
    return expired.length;
  }

  /** One generation: its members' entries, its member index, its items, then its ledger entry (so an interrupted delete is finished later). */
  private async deleteGeneration(entry: Entry): Promise<void> {
    const teamId = Number(entry.team_id);
    const generation = String(entry.generation);
    const members: Key[] = [];
    for await (const page of queryPages(this.doc, this.tableName, memberPartition(teamId, generation), { keysOnly: true })) members.push(...page);
    await changeUsersMemberships(this.doc, this.tableName, members.map((member) => [memberUserIdOf(member), [membershipEntry(teamId, generation)]]), 'DELETE', this.beforeWrite);
    const writer = new BatchWriter(this.doc, this.tableName, { beforeSend: this.beforeWrite });
    for (const key of members) await writer.delete(key);
    for (const resource of LIST_RESOURCES) {
      // A page of keys at a time: a generation of millions of items is never held in memory.
      for await (const page of queryPages(this.doc, this.tableName, generationPartition(teamId, generation, resource), { keysOnly: true })) {
        for (const key of page) await writer.delete(key);
      }
    }
    await writer.flush();
    await this.delete(entry);
  }

  private async delete(...keys: Key[]): Promise<void> {
    for (const { pk, sk } of keys) {
      this.beforeWrite();
      await this.doc.send(new DeleteCommand({ TableName: this.tableName, Key: { pk, sk } }));
    }
  }
}
