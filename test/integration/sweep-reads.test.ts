import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerPartitions } from '../../shared/table/keys.ts';
import { applyPlan } from '../../shared/write/apply.ts';
import { acquireSyncLease } from '../../shared/write/lease.ts';
import { readPlan } from '../../shared/write/plan.ts';
import { TeamLocks } from '../../shared/write/team-locks.ts';
import type { Writer } from '../../shared/write/writer.ts';
import { byId, changed, changesForm, type StateWrite, teamOf, type WorldModel } from '../support/desired-states.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { spacedProjects } from '../support/list-changes.ts';

/**
 * The sweep after a write (shared/write/apply.ts) reads every shard of the ledger, and nothing there is
 * due until it has been replaced for 6 minutes: a writer that writes a batch a second (the sync) reads
 * the ledger at most once a minute, not once a batch (48 strongly consistent Queries, a read unit each
 * at least, more than the batch's own writes cost).
 */
const TEAM = { id: 1, slug: 'swept', name: 'Swept' };
const world: WorldModel = {
  teams: [
    { ...TEAM, projects: byId(spacedProjects(TEAM.id, 3)), daemons: new Map(), servers: [], costs: [], members: [10] },
  ],
  users: [{ id: 10, name: 'Ada' }],
  tokens: [],
};
const renamed = (before: WorldModel, name: string) =>
  changed(before, (next) => {
    const projects = teamOf(next, TEAM.id).projects;
    const [id, row] = [...projects][1]!;
    projects.set(id, { ...row, name });
  });

describe('the sweep of a writer', () => {
  let table: TestTable;
  let release: () => Promise<void>;
  let now = Date.now();
  let ledgerQueries = 0;
  let writer: Writer;

  beforeAll(async () => {
    table = await freshTable();
    const lease = await acquireSyncLease(table.doc, table.tableName);
    release = () => lease.release();
    writer = {
      doc: table.doc,
      tableName: table.tableName,
      owner: lease.owner,
      locks: new TeamLocks(table, lease.owner, 'sync'),
      clock: () => now,
      log: (line) => {
        throw new Error(`the writer said: ${line}`);
      },
    };
    table.doc.middlewareStack.add(
      (next, context) => async (args) => {
        const { ExpressionAttributeValues: values } = args.input as {
          ExpressionAttributeValues?: Record<string, unknown>;
        };
        if (context.commandName === 'QueryCommand' && String(values?.[':pk']).startsWith('LEDGER#')) ledgerQueries += 1;
        return next(args);
      },
      { step: 'initialize', name: 'ledgerQueries' },
    );
  });
  afterAll(async () => {
    await writer?.locks.releaseAll();
    await release?.();
  });

  /** The ledger's Queries of one write, swept before it returns. */
  const write = async ({ state, items }: StateWrite) => {
    ledgerQueries = 0;
    const plan = await readPlan(writer, state, { tokenOfAnotherUser: 'move', slugCycles: 'together', startedAt: now });
    expect(plan.problems).toEqual([]);
    await applyPlan(writer, plan, items);
    return ledgerQueries;
  };

  it('reads the ledger once a minute at most, whatever the writes between', async () => {
    // Generations pending (their writers alive?), retired, and versions replaced.
    const everyShard = 3 * ledgerPartitions().length;
    let state = world;
    expect(await write(changesForm({ ...world, teams: [] }, world))).toBe(everyShard);
    const first = now;
    for (const second of [1, 2, 30, 59]) {
      now = first + second * 1_000;
      const next = renamed(state, `Renamed at ${second} s`);
      expect(await write(changesForm(state, next)), `${second} s after the first`).toBe(0);
      state = next;
    }
    now = first + 60_000;
    expect(await write(changesForm(state, renamed(state, 'A minute on')))).toBe(everyShard);
  });
});
