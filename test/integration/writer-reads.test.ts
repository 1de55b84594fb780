import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byId, changed, changesForm, teamOf, type WorldModel, wholeForm } from '../support/desired-states.ts';
import { desiredWriter } from '../support/desired-writes.ts';
import { callRecorder } from '../support/calls.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { ListModel, modelItems, spacedProjects, walkProjects } from '../support/list-changes.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * What a change by the item reads of its list (shared/write/list-store.ts, readStoredAround), at the
 * writer's client, in read units as DynamoDB answers them: a few changes read only the items a binary
 * search for each looks at; a backlog of many (a busy team's changes, taken in one batch of the sync)
 * reads the list whole, a page at a time, which then costs fewer units than as many searches. Either
 * way the list served afterwards is the one the changes make.
 */
const TEAM = { id: 1, slug: 'busy', name: 'Busy' };
const PROJECTS = 2_000;
const secret = 'writer-reads-secret';

const world: WorldModel = {
  teams: [
    {
      ...TEAM,
      projects: byId(spacedProjects(TEAM.id, PROJECTS)),
      daemons: new Map(),
      servers: [],
      costs: [],
      members: [10],
    },
  ],
  users: [{ id: 10, name: 'Ada' }],
  tokens: [{ sanctumId: 70, userId: 10, secret, name: 'token', abilities: ['*'], expiresAt: null }],
};

/** Renames every `step`-th project and adds one after each renamed one: 2 × PROJECTS / step edits. */
function busy(before: WorldModel, step: number, label: string): WorldModel {
  return changed(before, (next) => {
    const projects = teamOf(next, TEAM.id).projects;
    for (const [id, row] of [...projects].filter((_, index) => index % step === 0)) {
      projects.set(id, { ...row, name: `${label} ${id}` });
      projects.set(id + 1, { ...row, id: id + 1, name: `Added ${id + 1}`, slug: `added-${id + 1}` });
    }
  });
}

describe('a change by the item reads', () => {
  let table: TestTable;
  let writer: Awaited<ReturnType<typeof desiredWriter>>;
  let recorder: ReturnType<typeof callRecorder>;
  let now = world;

  beforeAll(async () => {
    table = await freshTable();
    writer = await desiredWriter(table, 'changes');
    await writer.write(wholeForm(world));
    recorder = callRecorder(writer.doc);
  }, 120_000);
  afterAll(() => writer?.stop());

  // The list read whole, strongly consistent: a unit a 4 KB of its items (and of the versions a
  // change wrote beside them), each item its JSON and about 100 bytes of keys and attributes.
  const wholeListUnits = (state: WorldModel) =>
    Math.ceil(
      [...teamOf(state, TEAM.id).projects.values()].reduce(
        (bytes, row) => bytes + JSON.stringify(row).length + 100,
        0,
      ) / 4_096,
    );

  it.each([
    // Two searches of about 11 items each (log2 of 2,000), and the item where each id is.
    { edits: 2, step: PROJECTS, most: () => 30 },
    // Read whole, twice over at most (the versions beside it); 1,000 searches would read every item.
    { edits: 1_000, step: 4, most: (state: WorldModel) => 2 * wholeListUnits(state) + 10 },
  ])('$edits edits in a list of 2,000: at most the list whole, then served as changed', async ({ step, most }) => {
    const after = busy(now, step, `Renamed by ${step}`);
    const { calls } = await recorder.trace(() => writer.write(changesForm(now, after)));
    const reads = calls.calls.filter((call) => ['Query', 'BatchGetItem', 'GetItem'].includes(call.operation));
    const units = reads.reduce((sum, call) => sum + call.readCapacity, 0);
    expect(units, JSON.stringify(reads)).toBeLessThanOrEqual(most(after));
    now = after;
    const model = new ListModel([...teamOf(after, TEAM.id).projects.values()] as { id: number; name: string }[]);
    const walked = await walkProjects(tableApi(table), TEAM.slug, secret);
    expect(walked.items).toEqual(modelItems(model));
  });
});
