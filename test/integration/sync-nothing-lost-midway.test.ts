import { expect, it } from 'vitest';
import { slotName } from '../../shared/sync/log/reader.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { describeSources } from '../support/source-databases.ts';
import { seedSource, type SourceSnapshot } from '../support/source-seed.ts';
import { hookedTable } from '../support/sync-attack.ts';
import { syncRuns } from '../support/sync-runs.ts';
import { type RunningSync, servedWithin } from '../support/sync.ts';
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
  const runs = syncRuns(engine, laravelData);
  const status = (table: TestTable) => async () =>
    (await tableApi(table).get('/api/acme/projects', { token: ADA })).status;

  /** Ada's token, issued (again) in the source, and served by `table`. */
  async function issueToken(table: TestTable) {
    await runs.db.query('DELETE FROM personal_access_tokens');
    await seedSource(runs.db, { tokens: [{ user_id: 10, token: ADA, abilities: ['*'] }] });
    await servedWithin(async () => (await status(table)()) === 200, 10_000, runs.said);
  }

  it("answers 401 within 10 s for the tokens a TRUNCATE removed, when the run ended midway through the TRUNCATE's pass (a deployed invocation's deadline) and the next took over from its position", async () => {
    const table = await freshTable();
    let first: RunningSync | undefined;
    // The deadline falls once the TRUNCATE's pass (the second) has written its first batch of teams.
    first = runs.start(table, {
      until: () => first !== undefined && first.fullPasses >= 2 && (first.progress?.teams.done ?? 0) > 0,
    });
    await first.readyNow;
    await issueToken(table);
    await runs.db.query('TRUNCATE personal_access_tokens');
    const committed = performance.now();
    await first.done;
    expect(first.fullPasses).toBe(2);
    // The next invocation takes over as the deployed sync does: from the position the first carried.
    runs.start(table, { changesFirst: true });
    await servedWithin(
      async () => (await status(table)()) === 401,
      10_000 - (performance.now() - committed),
      runs.said,
    );
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
        await runs.db.adminQuery(
          'SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1',
          [slotName(table.tableName)],
        );
      else {
        const [dump] = await runs.db.adminQuery<{ ID: number }>(
          "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%' AND USER = $1",
          [new URL(runs.db.syncUrl).username],
        );
        await runs.db.adminQuery(`KILL ${Number(dump!.ID)}`);
      }
      await servedWithin(async () => sync!.lines.length > 0, 10_000, runs.said);
    });
    sync = runs.start(hooked);
    await sync.readyNow;
    await issueToken(table);
    await runs.db.query('TRUNCATE personal_access_tokens');
    const committed = performance.now();
    await servedWithin(
      async () => (await status(table)()) === 401,
      10_000 - (performance.now() - committed),
      () => `killed: ${cut}; ${runs.said()}`,
    );
    expect(cut).toBe(true);
  }, 60_000);
});
