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
    /** Plans and applies `written`, then sweeps what it replaced once retention is over. */
    async write({ state, items }: StateWrite): Promise<void> {
      const plan = await readPlan(w, state, { ...OPTIONS[form], startedAt: w.clock() });
      if (plan.problems.length > 0) throw new Error(`the plan has problems: ${JSON.stringify(plan.problems)}`);
      await applyPlan(w, plan, items);
      ahead += SWEEP_AFTER_MS + 60_000;
      await sweepReplaced(w, w.clock());
      if (lines.length > 0) throw new Error(`the writer said:\n${lines.join('\n')}`);
    },
    /** The items written by `work`. */
    count: (work: () => Promise<unknown>): Promise<WriteCount> => counted.count(work),
    async stop(): Promise<void> {
      await locks.releaseAll();
      await lease.release();
    },
  };
}
