import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { importDocument, type TestTable } from '../support/dynamodb.ts';
import { propertyParameters, replayHint, runs, timeLimit } from '../support/fuzz.ts';
import { limitedDynamoDb, throughCommandClients } from '../support/limited-dynamodb.ts';
import { ListModel, modelItems, walkProjects } from '../support/list-changes.ts';
import { server, snapshot, team, token, user } from '../support/snapshots.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * Lists that change by the item (docs/storage.md; docs/contract.md, section 9, "At any size"),
 * property-based from the suite's seed: random sequences of inserts, renames and removals at random
 * positions, each step imported, then the API's pages walked by `links.next` and compared with a
 * model after every step: every item once, in id order, with its name, and `meta.total` right on
 * every page. Through the limiter and the import's own clients.
 *
 * Through the import rather than the sync: a step is one write whose end is known (no log to wait
 * for, no second database), so a failing sequence replays exactly and shrinks; and the import plans a
 * list given whole against the list stored (a diff, then a change by the item, or a new generation
 * when a step changes more than a quarter of a short list), so the sequences go through both ways a
 * list changes. The sync's own path (changes by the item, read around them) has its property test
 * in test/unit/list-edits-located.test.ts and its sizes in test/integration/sync-at-size.test.ts.
 *
 * A failure prints fast-check's seed, path and the shortest failing sequence it found (shrinking
 * capped: each try imports a whole sequence); a pass prints the seed and how to replay it.
 */
const FILE = 'test/robustness/list-changes.property.test.ts';
const RUNS = 12;
const MAX_SHRINKS = 40;
const live = limitedDynamoDb();
let table: TestTable;
let api: ReturnType<typeof tableApi>;
let run = 0;

beforeAll(async () => {
  process.env.LOG_LEVEL = 'SILENT';
  table = throughCommandClients(await live.table(), live.endpoint);
  api = tableApi(table);
});

type Change = { kind: 'insert' | 'rename' | 'remove'; at: number; name: number };
const change = fc.record({
  kind: fc.constantFrom<Change['kind']>('insert', 'rename', 'remove'),
  at: fc.nat(),
  name: fc.nat({ max: 9 }),
});
const scenario = fc.record({
  initial: fc.integer({ min: 0, max: 60 }),
  /** Each step: the changes one import brings. */
  steps: fc.array(fc.array(change, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 8 }),
  perPage: fc.integer({ min: 1, max: 9 }),
});

/** Applies one change to the model; ids are spaced so that an insert between two finds room (else it is skipped). */
function apply(model: ListModel, { kind, at, name }: Change): void {
  const { ids } = model;
  if (kind === 'insert') {
    const position = at % (ids.length + 1);
    const before = ids[position - 1] ?? 0;
    const after = ids[position] ?? before + 2_048;
    if (after - before >= 2) model.set(Math.floor((before + after) / 2), `inserted ${name}`);
  } else if (ids.length > 0) {
    const id = ids[at % ids.length]!;
    if (kind === 'rename') model.set(id, `renamed ${name}`);
    else model.remove(id);
  }
}

describe('a list changed by random inserts, renames and removals (property-based, through the limiter)', () => {
  it(
    'is served, after every step, as the model has it: every item once, in id order, total right',
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.limitShrink(scenario, MAX_SHRINKS), async ({ initial, steps, perPage }) => {
          run += 1;
          const teamId = 1_000 + run;
          const secret = `list-changes-secret-${run}`;
          const model = new ListModel(
            Array.from({ length: initial }, (_, i) => ({ id: (i + 1) * 1_024, name: `project ${(i + 1) * 1_024}` })),
          );
          const imported = () =>
            importDocument(
              table,
              snapshot({
                teams: [team(teamId, `list-${run}`)],
                users: [user(teamId, [teamId])],
                tokens: [token(teamId, secret)],
                servers: [server(teamId, teamId)],
                projects: modelItems(model).map(({ id, name }) => ({
                  id,
                  team_id: teamId,
                  client_id: null,
                  name,
                  slug: `p-${id}`,
                  created_at: '2026-03-04T05:06:07Z',
                })),
              }),
            );
          await imported();
          for (const [i, step] of steps.entries()) {
            for (const one of step) apply(model, one);
            await imported();
            const walked = await walkProjects(api, teamId, secret, perPage);
            expect(walked.items, `after step ${i + 1}`).toEqual(modelItems(model));
            expect(walked.totals, `after step ${i + 1}`).toEqual([model.ids.length]);
            expect(walked.pages).toBe(Math.max(1, Math.ceil(model.ids.length / perPage)));
          }
        }),
        propertyParameters(RUNS),
      );
      console.info(replayHint(FILE));
    },
    timeLimit(600_000, RUNS, runs(RUNS)),
  );
});
