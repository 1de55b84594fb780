import { DeleteCommand, paginateQuery, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LIST_RESOURCES } from '../../shared/domain/resources.ts';
import {
  LEDGER_PARTITION, memberPartition, membershipEntry, memberUserIdOf, pendingRange, generationPartition, retiredUntil, type Key,
} from '../store/keys.ts';
import { BatchWriter } from '../store/batch-write.ts';
import { forEachConcurrently } from '../store/concurrently.ts';
import { listUserTokens, removeMemberships } from '../store/memberships.ts';

/**
 * Retention: a replaced generation stays readable for at least 5 minutes after the switch that
 * replaced it, however many imports follow (a request runs for seconds), and is deleted by the
 * first import that runs after that. The ledger (commands/store/keys.ts) records when each
 * generation was retired, so every import sweeps exactly what has been retired long enough, of
 * any team. Generations still pending when an import holds the lock belong to imports that died
 * before switching them: no reader ever saw them, and they are swept at once.
 */
const RETENTION_MS = 5 * 60_000;
/** A minute more than the contract's 5, for the clocks of two machines that disagree a little. */
const SWEEP_AFTER_MS = RETENTION_MS + 60_000;

interface LedgerEntry extends Key {
  team_id: number;
  generation: string;
}

export interface SweepOptions {
  /** Wall-clock milliseconds now (injectable: tests move it on). */
  now: number;
  /** Called before each write: the import lock's check. */
  beforeWrite?: () => void;
  onSwept?: (team: number, generation: string, why: 'dead import' | 'retired') => void;
}

/** Sweeps what may go: dead imports' generations, and generations retired long enough ago. */
export async function sweep(doc: DynamoDBDocumentClient, tableName: string, options: SweepOptions): Promise<number> {
  const dead = await ledger(doc, tableName, pendingRange());
  const expired = await ledger(doc, tableName, retiredUntil(options.now - SWEEP_AFTER_MS));
  for (const [entries, why] of [[dead, 'dead import'], [expired, 'retired']] as const) {
    for (const entry of entries) {
      await sweepGeneration(doc, tableName, entry.team_id, entry.generation, options);
      options.beforeWrite?.();
      // The ledger entry goes last: a sweep that is interrupted is finished by the next import.
      await doc.send(new DeleteCommand({ TableName: tableName, Key: { pk: entry.pk, sk: entry.sk } }));
      options.onSwept?.(entry.team_id, entry.generation, why);
    }
  }
  return dead.length + expired.length;
}

/**
 * Deletes one generation: first its members' membership entries (found through the
 * generation's member index), then the member index, then its projects and daemons.
 */
async function sweepGeneration(doc: DynamoDBDocumentClient, tableName: string, teamId: number, generation: string, options: SweepOptions): Promise<void> {
  const entry = membershipEntry(teamId, generation);
  const members: Key[] = [];
  for await (const page of partitionPages(doc, tableName, memberPartition(teamId, generation))) members.push(...page);
  await forEachConcurrently(members, 8, async (member) => {
    for (const hash of await listUserTokens(doc, tableName, memberUserIdOf(member))) {
      options.beforeWrite?.();
      await removeMemberships(doc, tableName, hash, [entry]);
    }
  });
  const writer = new BatchWriter(doc, tableName, { beforeSend: options.beforeWrite });
  for (const key of members) await writer.delete(key);
  for (const resource of LIST_RESOURCES) {
    // A page of keys at a time: a generation of millions of items is never held in memory.
    for await (const page of partitionPages(doc, tableName, generationPartition(teamId, generation, resource))) {
      for (const key of page) await writer.delete(key);
    }
  }
  await writer.flush();
}

async function ledger(doc: DynamoDBDocumentClient, tableName: string, range: { from: string; to: string }): Promise<LedgerEntry[]> {
  const entries: LedgerEntry[] = [];
  const pages = paginateQuery({ client: doc }, {
    TableName: tableName,
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
    ExpressionAttributeValues: { ':pk': LEDGER_PARTITION, ':from': range.from, ':to': range.to },
    ConsistentRead: true,
  });
  for await (const page of pages) entries.push(...((page.Items ?? []) as LedgerEntry[]));
  return entries;
}

/** The keys of a partition, a page at a time (a generation's partitions are read only to be deleted). */
async function* partitionPages(doc: DynamoDBDocumentClient, tableName: string, pk: string): AsyncGenerator<Key[]> {
  const pages = paginateQuery({ client: doc }, {
    TableName: tableName,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': pk },
    ProjectionExpression: 'pk, sk',
    ConsistentRead: true,
  });
  for await (const page of pages) yield (page.Items ?? []) as Key[];
}
