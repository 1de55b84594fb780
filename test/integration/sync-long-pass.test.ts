import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createDynamoDbClient } from '../../shared/table/dynamodb-client.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * A full pass over a large source takes longer than 10 s (a first load, or the periodic pass of a
 * big database): the changes committed meanwhile are applied between its batches of teams, not after
 * it (docs/sync.md, "How changes are found"). Here a sync starts over a table already in step (its
 * first pass then writes nothing), but every call it sends DynamoDB waits 200 ms first, so that
 * reading 300 teams' heads takes it well over 10 s; once it has gone past team 1, team 1 changes.
 */
const TEAMS = 300;
const SECRET = 'long-pass-secret-0001';

/**
 * The table through a client whose every call waits `ms` first (a slow table for the sync alone),
 * telling `onCall` what each call asks for.
 */
function slowCalls(table: TestTable, ms: number, onCall: (input: string) => void): TestTable {
  const client = createDynamoDbClient({ endpoint: table.endpoint, maxAttempts: 5, requestTimeoutMs: 30_000 });
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  doc.middlewareStack.add(
    (next) => async (args) => {
      onCall(JSON.stringify(args.input));
      await sleep(ms);
      return next(args);
    },
    { step: 'initialize', name: 'slowCalls' },
  );
  return { ...table, client, doc } as TestTable;
}

describeSources('a change committed during a long full pass', (engine) => {
  let db: SourceDatabase;
  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    const teams = Array.from({ length: TEAMS }, (_, i) => ({
      id: i + 1,
      slug: `team-${i + 1}`,
      name: `Team ${i + 1}`,
    }));
    await seedSource(db, {
      teams: teams.map((team) => ({ ...team, user_id: 10 })),
      users: [{ id: 10, name: 'Ada', teams: teams.map((team) => team.id) }],
      tokens: [{ id: 70, user_id: 10, token: SECRET, abilities: ['*'] }],
      projects: teams.map((team) => ({
        id: team.id,
        team_id: team.id,
        name: 'First',
        slug: 'first',
        created_at: '2026-01-02T03:04:05Z',
      })),
    });
    await setUp(db);
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  it('is served within 10 s, before the pass has finished', async () => {
    const table = await freshTable();
    const api = tableApi(table);
    const first = startSync(db, table);
    await first.readyNow; // a first load: how long it takes is not what this case is about
    await first.stop();
    // The pass reads teams in batches of 20, in id order: a read of team 21's head is past team 1.
    let pastTeamOne: () => void = () => {};
    const past = new Promise<void>((resolve) => {
      pastTeamOne = resolve;
    });
    const sync = startSync(
      db,
      slowCalls(table, 200, (input) => input.includes('"TEAMREF#21"') && pastTeamOne()),
    );
    try {
      await past;
      await db.query(`UPDATE projects SET name = 'Renamed' WHERE id = 1`);
      await servedWithin(
        async () => (await api.get('/api/team-1/projects', { token: SECRET })).body.data[0].name === 'Renamed',
      );
      expect(sync.ready).toBe(false);
      expect(sync.lines).toEqual([]);
    } finally {
      await sync.stop();
    }
  }, 180_000);
});
