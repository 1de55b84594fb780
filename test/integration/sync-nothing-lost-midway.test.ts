import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { slotName } from '../../shared/sync/log/reader.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource, type SourceSnapshot } from '../support/source-seed.ts';
import { hookedTable } from '../support/sync-attack.ts';
import { type RunningSync, servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * No change lost when a run ends, or its log drops, midway through what a change asks of it
 * (docs/contract.md, section 9: "every change committed in the source is answered by the API no later
 * than 10 s after its commit"; "a sync killed at any instant … no change lost"; "a source that is
 * unreachable … catches up when the source is back, losing no change"). A TRUNCATE names no row: the
 * sync reads the parts it feeds again for every team, by a full pass of those parts, tokens last. A
 * position of the log after the TRUNCATE may be acknowledged only once that pass is done: a run ended
 * midway through it (a deployed invocation's deadline), or a stream of the log that drops meanwhile,
 * must leave the TRUNCATE in the log for the next stream to read again.
 */
const ADA = 'nothing-lost-midway-ada-token';

function laravelData(): SourceSnapshot {
  return {
    teams: [{ id: 1, slug: 'acme', name: 'Acme', user_id: 10 }],
    users: [{ id: 10, name: 'Ada', teams: [1] }],
    projects: [{ id: 100, team_id: 1, name: 'Site', slug: 'site' }],
  };
}

describeSources('a TRUNCATE, its pass cut midway', (engine) => {
  let db: SourceDatabase;
  const syncs: RunningSync[] = [];
  const said = () => `the syncs said: ${JSON.stringify(syncs.map((sync) => sync.lines))}`;
  const status = (table: TestTable) => async () =>
    (await tableApi(table).get('/api/acme/projects', { token: ADA })).status;

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, laravelData());
    await setUp(db);
  }, 60_000);
  afterEach(async () => {
    for (const sync of syncs.splice(0)) await sync.stop();
  });
  afterAll(async () => {
    await db?.drop();
  });

  /** Ada's token, issued (again) in the source, and served by `table`. */
  async function issueToken(table: TestTable) {
    await db.query('DELETE FROM personal_access_tokens');
    await seedSource(db, { tokens: [{ user_id: 10, token: ADA, abilities: ['*'] }] });
    await servedWithin(async () => (await status(table)()) === 200, 10_000, said);
  }

  it("answers 401 within 10 s for the tokens a TRUNCATE removed, when the run ended midway through the TRUNCATE's pass (a deployed invocation's deadline) and the next took over from its position", async () => {
    const table = await freshTable();
    let first: RunningSync | undefined;
    // The deadline falls once the TRUNCATE's pass (the second) has written its first batch of teams.
    first = startSync(db, table, {
      until: () => first !== undefined && first.fullPasses >= 2 && (first.progress?.teams.done ?? 0) > 0,
    });
    syncs.push(first);
    await first.readyNow;
    await issueToken(table);
    await db.query('TRUNCATE personal_access_tokens');
    const committed = performance.now();
    await first.done;
    expect(first.fullPasses).toBe(2);
    // The next invocation takes over as the deployed sync does: from the position the first carried.
    const next = startSync(db, table, { changesFirst: true });
    syncs.push(next);
    await servedWithin(async () => (await status(table)()) === 401, 10_000 - (performance.now() - committed), said);
  }, 60_000);

  it("answers 401 within 10 s for the tokens a TRUNCATE removed, when the log's connection is killed by the server midway through the TRUNCATE's pass", async () => {
    let sync: RunningSync | undefined;
    let cut = false;
    const table = await freshTable();
    // Once the TRUNCATE's pass has written its teams, its first call for the tokens waits until the
    // server has killed the log's connection and the sync has said the source failed.
    const hooked = hookedTable(table, async () => {
      if (cut || !sync || sync.fullPasses < 2 || (sync.progress?.teams.done ?? 0) === 0) return;
      cut = true;
      if (engine === 'postgres')
        await db.adminQuery('SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1', [
          slotName(table.tableName),
        ]);
      else {
        const [dump] = await db.adminQuery<{ ID: number }>(
          "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%' AND USER = $1",
          [new URL(db.syncUrl).username],
        );
        await db.adminQuery(`KILL ${Number(dump!.ID)}`);
      }
      await servedWithin(async () => sync!.lines.length > 0, 10_000, said);
    });
    sync = startSync(db, hooked);
    syncs.push(sync);
    await sync.readyNow;
    await issueToken(table);
    await db.query('TRUNCATE personal_access_tokens');
    const committed = performance.now();
    await servedWithin(
      async () => (await status(table)()) === 401,
      10_000 - (performance.now() - committed),
      () => `killed: ${cut}; ${said()}`,
    );
    expect(cut).toBe(true);
  }, 60_000);
});
