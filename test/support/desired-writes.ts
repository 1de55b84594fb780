import {
  type AttributeValue,
  BatchGetItemCommand,
  BatchWriteItemCommand,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { untilProcessed, WRITER_RETRIES } from '../../shared/table/retry.ts';
import { applyPlan } from '../../shared/write/apply.ts';
import { acquireImportLease, acquireSyncLease } from '../../shared/write/lease.ts';
import { SWEEP_AFTER_MS, sweepReplaced } from '../../shared/write/ledger.ts';
import { type PlanOptions, readPlan } from '../../shared/write/plan.ts';
import { TeamLocks } from '../../shared/write/team-locks.ts';
import type { Writer } from '../../shared/write/writer.ts';
import type { StateWrite } from './desired-states.ts';
import type { TestTable } from './dynamodb.ts';
import { countedTable, type WriteCount } from './writes.ts';

/**
 * A DesiredState written through the writers' one path (shared/write/plan.ts, apply.ts) as each front
 * end writes one: under its command's lease (the import's, commands/import/importer.ts; the sync's,
 * shared/sync/run.ts) and each team's lock, with the plan's options that front end takes
 * (shared/sync/batch.ts: a token follows the source to another user, slugs swapped switch together).
 *
 * Counted at the writer's own client (test/support/writes.ts): the team locks, the items, the ledger,
 * and the sweep of what the write replaced, run with the writers' clock moved past retention (as the
 * next write runs it; import-at-size.test.ts does the same). The lease is the command's, taken once a
 * run however many changes it writes: it goes through a client of its own, uncounted, as the at-size
 * tests leave it out.
 *
 * What a count wrote can be undone (`undo`): each item it wrote is first read as it was, and put back
 * (or removed again) afterwards, through the table's own client, uncounted: the table as it was
 * before, to the byte, at the cost of the few items the change wrote.
 */
export type Form = 'whole' | 'changes';

const OPTIONS: Record<Form, Omit<PlanOptions, 'startedAt'>> = {
  whole: { tokenOfAnotherUser: 'refuse' },
  changes: { tokenOfAnotherUser: 'move', slugCycles: 'together' },
};

export async function desiredWriter(table: TestTable, form: Form) {
  const counted = countedTable(table);
  const lease = await (form === 'whole' ? acquireImportLease : acquireSyncLease)(table.doc, table.tableName);
  const locks = new TeamLocks(counted.table, lease.owner, form === 'whole' ? 'import' : 'sync');
  const kept = keepBefore(counted.table, table);
  let ahead = 0;
  const lines: string[] = [];
  const w: Writer = {
    doc: counted.table.doc,
    tableName: table.tableName,
    owner: lease.owner,
    locks,
    clock: () => Date.now() + ahead,
    log: (line) => lines.push(line),
  };
  return {
    /** The writer's client (counted), for a test that records its calls (test/support/calls.ts). */
    doc: w.doc,
    /** Plans and applies `written`, then sweeps what it replaced once retention is over. */
    async write({ state, items }: StateWrite): Promise<void> {
      const plan = await readPlan(w, state, { ...OPTIONS[form], startedAt: w.clock() });
      if (plan.problems.length > 0) throw new Error(`the plan has problems: ${JSON.stringify(plan.problems)}`);
      await applyPlan(w, plan, items);
      ahead += SWEEP_AFTER_MS + 60_000;
      await sweepReplaced(w, w.clock());
      if (lines.length > 0) throw new Error(`the writer said:\n${lines.join('\n')}`);
    },
    /** The items written by `work`, each kept as it was before for `undo`. */
    async count(work: () => Promise<unknown>): Promise<WriteCount> {
      kept.start();
      try {
        return await counted.count(work);
      } finally {
        kept.stop();
      }
    },
    /** Puts back every item the last count wrote, as it was before it (uncounted). */
    undo: () => kept.putBack(),
    async stop(): Promise<void> {
      await locks.releaseAll();
      await lease.release();
    },
  };
}

type Key = { pk: string; sk: string };
type WriteInput = {
  Item?: Key;
  Key?: Key;
  RequestItems?: Record<string, { PutRequest?: { Item: Key }; DeleteRequest?: { Key: Key } }[]>;
  TransactItems?: { Put?: { Item: Key }; Update?: { Key: Key }; Delete?: { Key: Key } }[];
};

/** The keys a write command of the document client is about to write. */
function keysOf(command: string, input: WriteInput): Key[] {
  switch (command) {
    case 'PutItemCommand':
      return [input.Item!];
    case 'UpdateItemCommand':
    case 'DeleteItemCommand':
      return [input.Key!];
    case 'BatchWriteItemCommand':
      return Object.values(input.RequestItems ?? {})
        .flat()
        .map((request) => request.PutRequest?.Item ?? request.DeleteRequest!.Key);
    case 'TransactWriteItemsCommand':
      return (input.TransactItems ?? []).flatMap(
        (action) => action.Put?.Item ?? (action.Update ?? action.Delete)?.Key ?? [],
      );
    default:
      return [];
  }
}

/**
 * While started, reads each item that `counted`'s client is about to write for the first time, as it
 * is (through `plain`'s client, consistently, as DynamoDB holds it), or that there is none; `putBack`
 * writes them back, or removes them again.
 */
function keepBefore(counted: TestTable, plain: TestTable) {
  type Raw = Record<string, AttributeValue>;
  const before = new Map<string, { key: Raw; item?: Raw }>();
  const text = (key: Raw) => `${key.pk!.S} ${key.sk!.S}`;
  let keeping = false;
  counted.doc.middlewareStack.add(
    (next, context) => async (args) => {
      const keys = keeping ? keysOf(String(context.commandName), args.input as WriteInput) : [];
      const unseen = new Map(
        keys.map(({ pk, sk }): [string, Raw] => [`${pk} ${sk}`, { pk: { S: pk }, sk: { S: sk } }]),
      );
      for (const seen of before.keys()) unseen.delete(seen);
      for (let i = 0; i < unseen.size; i += 100) {
        const batch = [...unseen.values()].slice(i, i + 100);
        await untilProcessed(
          'BatchGetItem',
          batch,
          async (pending) => {
            const read = { [plain.tableName]: { Keys: pending, ConsistentRead: true } };
            const found = await plain.client.send(new BatchGetItemCommand({ RequestItems: read }));
            // The first read of a key is the one from before any write of it: kept, never replaced.
            for (const item of found.Responses?.[plain.tableName] ?? [])
              if (!before.has(text(item))) before.set(text(item), { key: item, item });
            return found.UnprocessedKeys?.[plain.tableName]?.Keys ?? [];
          },
          WRITER_RETRIES,
        );
        for (const key of batch) if (!before.has(text(key))) before.set(text(key), { key });
      }
      return next(args);
    },
    { step: 'initialize', name: 'keepBefore' },
  );
  return {
    start: () => {
      before.clear();
      keeping = true;
    },
    stop: () => {
      keeping = false;
    },
    async putBack(): Promise<void> {
      const requests: WriteRequest[] = [...before.values()].map(({ key, item }) =>
        item ? { PutRequest: { Item: item } } : { DeleteRequest: { Key: key } },
      );
      before.clear();
      for (let i = 0; i < requests.length; i += 25) {
        await untilProcessed(
          'BatchWriteItem',
          requests.slice(i, i + 25),
          async (pending) => {
            const sent = await plain.client.send(
              new BatchWriteItemCommand({ RequestItems: { [plain.tableName]: pending } }),
            );
            return sent.UnprocessedItems?.[plain.tableName] ?? [];
          },
          WRITER_RETRIES,
        );
      }
    },
  };
}
