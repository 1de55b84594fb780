import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { createDynamoDbClient } from '../../shared/table/dynamodb-client.ts';
import { freshTable, type TestTable } from './dynamodb.ts';
import { createSourceDatabase, type SourceDatabase } from './source-databases.ts';
import { seedSource, type SourceSnapshot } from './source-seed.ts';
import type { SourceEngine } from './source-servers.ts';
import { type RunningSync, servedWithin, settledBy, setUp, startSync } from './sync.ts';
import { tableApi } from './table-api.ts';

/**
 * What the attacks on the sync's transactions share (sync-transactions-while-reading.test.ts, and
 * sync-transactions-at-scale.test.ts in the `at-size` project): a table whose calls a case may hold
 * back, transactions of the app's role, and a client polling what a token is answered all along.
 */

/** What a case of an attack holds, once its file's set-up is done. */
export interface Attacked {
  db: SourceDatabase;
  table: TestTable;
  api: ReturnType<typeof tableApi>;
  sync: RunningSync;
  app: ReturnType<typeof appTransactions>;
  /** Resolves once the sync has served everything committed before (team 5, seen by `token`). */
  settled: () => Promise<void>;
}
type Hook = (operation: string, input: any) => void | Promise<void>;

/**
 * The file's set-up: `data` seeded into a source of `engine`, set up, and synced into a fresh table
 * through a client whose every call first passes the hook a case may set (`hook()`, cleared before each
 * case by `clear`); `ready` is handed what the cases use.
 */
export function attackedSync(
  engine: SourceEngine,
  { data, token }: { data: () => SourceSnapshot; token: string },
  hook: () => Hook | undefined,
  clear: () => void,
  ready: (attacked: Attacked) => void,
) {
  let attacked: Attacked | undefined;
  beforeAll(async () => {
    const db = await createSourceDatabase(engine);
    const app = appTransactions(db);
    await seedSource(db, data());
    await setUp(db);
    const table = await freshTable();
    const api = tableApi(table);
    const settled = settledBy(db, api, { id: 5, segment: 't5', token });
    const sync = startSync(
      db,
      hookedTable(table, (operation, input) => hook()?.(operation, input)),
    );
    attacked = { db, table, api, sync, app, settled };
    ready(attacked);
    await servedWithin(async () => sync.ready, 90_000);
  }, 150_000);
  beforeEach(clear);
  afterAll(async () => {
    clear();
    await attacked?.sync.stop();
    await attacked?.db.drop();
  });
}

/** The table through a client whose every call first passes `at(operation, input)` (which may wait). */
export function hookedTable(table: TestTable, at: (operation: string, input: any) => void | Promise<void>): TestTable {
  const client = createDynamoDbClient({ endpoint: table.endpoint, maxAttempts: 5, requestTimeoutMs: 30_000 });
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      await at(String(context.commandName).replace(/Command$/, ''), (args as { input: unknown }).input);
      return next(args);
    },
    { step: 'initialize', name: 'attackHook' },
  );
  return { ...table, client, doc } as TestTable;
}

/** Statements of the application role, in one transaction; and a membership's INSERT. */
export function appTransactions(db: SourceDatabase) {
  const now = db.engine === 'postgres' ? 'now()' : 'NOW()';
  const begin = db.engine === 'postgres' ? 'BEGIN' : 'START TRANSACTION';
  return {
    now,
    transaction: async (statements: string[]) => {
      const session = await db.session();
      try {
        await session.query(begin);
        for (const statement of statements) await session.query(statement);
        await session.query('COMMIT');
      } finally {
        await session.close();
      }
    },
    member: (teamId: number, userId: number) =>
      'INSERT INTO team_user (team_id, user_id, role, created_at, updated_at) ' +
      `VALUES (${teamId}, ${userId}, 'editor', ${now}, ${now})`,
  };
}

/**
 * Polls `paths` with `token` in rounds until stopped: each round's statuses. Back to back, with no
 * pause: a state served for a moment between two batches is what it is there to see.
 */
export function pollStatuses(api: ReturnType<typeof tableApi>, token: string, paths: string[]) {
  const rounds: number[][] = [];
  let polling = true;
  const done = (async () => {
    while (polling) {
      const round: number[] = [];
      for (const path of paths) round.push((await api.get(path, { token })).status);
      rounds.push(round);
    }
  })();
  return {
    rounds,
    stop: async () => {
      polling = false;
      await done;
    },
  };
}

/** How many rounds saw each combination of statuses, for a failure's message. */
export function tally(rounds: number[][]): string {
  const counts = new Map<string, number>();
  for (const round of rounds) counts.set(round.join('/'), (counts.get(round.join('/')) ?? 0) + 1);
  return JSON.stringify(Object.fromEntries(counts));
}
