import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDynamoDbClient } from '../../shared/table/dynamodb-client.ts';
import type { TestTable } from './dynamodb.ts';
import type { SourceDatabase } from './source-databases.ts';
import type { tableApi } from './table-api.ts';

/**
 * What the attacks on the sync's transactions share (sync-transactions-while-reading.test.ts, and
 * sync-transactions-at-scale.test.ts in the `at-size` project): a table whose calls a case may hold
 * back, transactions of the app's role, and a client polling what a token is answered all along.
 */

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
