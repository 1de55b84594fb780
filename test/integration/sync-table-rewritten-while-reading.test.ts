import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource, type SourceSnapshot } from '../support/source-seed.ts';
import { appTransactions, hookedTable } from '../support/sync-attack.ts';
import { type RunningSync, servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * A migration that rewrites a table never makes the sync serve its rows as gone (docs/contract.md,
 * section 9: "Schema changes never hurt the app … losing no change"; what the source says, the API
 * serves). PostgreSQL's table-rewriting ALTER TABLE is not MVCC-safe: a transaction whose snapshot was
 * taken before the rewrite committed sees the table empty once it reads it after
 * (https://www.postgresql.org/docs/current/mvcc-caveats.html). The sync reads a batch in one
 * REPEATABLE READ snapshot; here a migration rewrites `projects` (a column the sync does not read
 * retyped) after that snapshot began and before the batch reads the project its change named.
 */
const ADA = 'table-rewritten-ada-token';

function laravelData(): SourceSnapshot {
  return {
    teams: [{ id: 1, slug: 'acme', name: 'Acme', user_id: 10 }],
    users: [{ id: 10, name: 'Ada', teams: [1] }],
    tokens: [{ id: 70, user_id: 10, token: ADA, abilities: ['*'] }],
    projects: [
      { id: 100, team_id: 1, name: 'Site', slug: 'site' },
      { id: 101, team_id: 1, name: 'Shop', slug: 'shop' },
    ],
  };
}

describeSources('a table rewritten while the sync reads', (engine) => {
  let db: SourceDatabase;
  let table: TestTable;
  let sync: RunningSync;
  let rewrite: (() => Promise<void>) | undefined;
  let rewritten = false;

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, laravelData());
    // A column of the app's that the sync does not read.
    await db.query('ALTER TABLE projects ADD COLUMN extra integer');
    await setUp(db);
    table = await freshTable();
    // The batch's snapshot begins with the users it reads; the migration commits while it reads the
    // users' items from the table, before it reads the projects.
    sync = startSync(
      db,
      hookedTable(table, async (operation, input) => {
        const keys = Object.values(input?.RequestItems ?? {}).flatMap((r: any) => r.Keys ?? []);
        if (!rewrite || operation !== 'BatchGetItem' || !keys.some((k: any) => String(k.pk).startsWith('USER#')))
          return;
        const run = rewrite;
        rewrite = undefined;
        await run();
        rewritten = true;
      }),
    );
    await sync.readyNow;
  }, 60_000);
  afterAll(async () => {
    await sync?.stop();
    await db?.drop();
  });

  it('serves a project renamed in the transaction that was read across a migration rewriting projects, within 10 s', async () => {
    const app = appTransactions(db);
    const api = tableApi(table);
    // The migration runs until it commits, or until it waits for a lock (the batch's, which it may
    // wait for: a read's wait, as for any other reader of the table); the batch then reads on.
    let migrated: Promise<unknown> = Promise.resolve();
    rewrite = async () => {
      let done = false;
      migrated = db
        .query(
          engine === 'postgres'
            ? 'ALTER TABLE projects ALTER COLUMN extra TYPE bigint'
            : 'ALTER TABLE projects MODIFY COLUMN extra bigint NULL, ALGORITHM=COPY',
        )
        .finally(() => {
          done = true;
        });
      const waiting = async () =>
        engine === 'postgres' &&
        (
          await db.adminQuery<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'ALTER TABLE projects%'",
          )
        )[0]!.n > 0;
      await servedWithin(async () => done || (await waiting()));
    };
    await app.transaction([
      "UPDATE users SET name = 'Ada L' WHERE id = 10",
      "UPDATE projects SET name = 'Site 2' WHERE id = 100",
    ]);
    const committed = performance.now();
    let last: unknown;
    await servedWithin(
      async () => {
        const answer = await api.get('/api/acme/projects', { token: ADA });
        last = (answer.body?.data ?? []).map((p: { name: string }) => p.name).sort();
        return JSON.stringify(last) === JSON.stringify(['Shop', 'Site 2']);
      },
      10_000 - (performance.now() - committed),
      () =>
        `the API answers ${JSON.stringify(last)}; rewritten: ${rewritten}; the sync said ${JSON.stringify(sync.lines)}`,
    );
    expect(rewritten).toBe(true);
    await migrated;
  }, 60_000);
});
