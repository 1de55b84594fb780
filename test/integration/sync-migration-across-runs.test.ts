import { it } from 'vitest';
import { slotName } from '../../shared/sync/log/reader.ts';
import { freshTable } from '../support/dynamodb.ts';
import { describeSources } from '../support/source-databases.ts';
import type { SourceSnapshot } from '../support/source-seed.ts';
import { syncRuns } from '../support/sync-runs.ts';
import { servedWithin } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * A migration that takes away a column the sync reads keeps only the parts that read it, whichever
 * run of the sync it falls in (docs/contract.md, section 9, "Schema changes never hurt the app": the
 * sync "keeps each affected part at its last good state, goes on syncing everything else"). The
 * deployed sync is a run per invocation, each taking over from the one before: the run that takes
 * over while costs.label is renamed must go on serving everything but the finances, a token revoked
 * among them.
 */
const ADA = 'migration-across-runs-ada-token';
const BOB = 'migration-across-runs-ada-token-two';

function laravelData(): SourceSnapshot {
  return {
    teams: [{ id: 1, slug: 'acme', name: 'Acme', user_id: 10 }],
    users: [{ id: 10, name: 'Ada', teams: [1] }],
    tokens: [
      { id: 70, user_id: 10, token: ADA, abilities: ['*'] },
      { id: 71, user_id: 10, token: BOB, abilities: ['*'] },
    ],
    projects: [{ id: 100, team_id: 1, name: 'Site', slug: 'site' }],
    costs: [{ id: 1, team_id: 1, label: 'Backups', amount: '5.00', currency: 'EUR' }],
  };
}

describeSources('a column renamed away, across runs', (engine) => {
  const runs = syncRuns(engine, laravelData);
  const now = engine === 'postgres' ? 'now()' : 'NOW()';

  it('answers 401 within 10 s for a token revoked after a deployed invocation took over while costs.label was renamed', async () => {
    const table = await freshTable();
    const api = tableApi(table);
    let deadline = false;
    const first = runs.start(table, { until: () => deadline });
    await first.readyNow;
    await runs.db.query('ALTER TABLE costs RENAME COLUMN label TO title');
    // A cost line added meanwhile: the first run finds the column gone, says so, and keeps the finances.
    await runs.db.query(
      `INSERT INTO costs (team_id, title, amount, currency, created_at, updated_at) VALUES (1, 'Disk', 2, 'EUR', ${now}, ${now})`,
    );
    await servedWithin(async () => first.lines.some((line) => line.includes('costs.label')), 10_000, runs.said);
    // The invocation's deadline; the next takes over.
    deadline = true;
    await first.done;
    const next = runs.start(table, { changesFirst: true });
    let ended = 'it runs';
    next.done.then(
      () => (ended = 'it ended'),
      (error: Error) => (ended = `it ended: ${error.message}`),
    );
    await runs.db.query('DELETE FROM personal_access_tokens WHERE id = 70');
    const revoked = performance.now();
    await servedWithin(
      async () => (await api.get('/api/acme/projects', { token: ADA })).status === 401,
      10_000 - (performance.now() - revoked),
      () => `${runs.said()}; the run that took over: ${ended}`,
    );
    // The column back: the finances kept meanwhile follow, the cost line added meanwhile with them.
    await runs.db.query('ALTER TABLE costs RENAME COLUMN title TO label');
    const back = performance.now();
    await servedWithin(
      async () => (await api.get('/api/acme/finances', { token: BOB })).body?.totals?.EUR === 7,
      10_000 - (performance.now() - back),
      runs.said,
    );
  }, 60_000);

  it("answers 401 within 10 s for a token revoked after the log's connection was killed while costs.label was renamed", async () => {
    const table = await freshTable();
    const api = tableApi(table);
    const sync = runs.start(table);
    let ended = 'it runs';
    sync.done.then(
      () => (ended = 'it ended'),
      (error: Error) => (ended = `it ended: ${error.message}`),
    );
    await sync.readyNow;
    await servedWithin(async () => (await api.get('/api/acme/projects', { token: BOB })).status === 200);
    await runs.db.query('ALTER TABLE costs RENAME COLUMN label TO title');
    await runs.db.query(
      `INSERT INTO costs (team_id, title, amount, currency, created_at, updated_at) VALUES (1, 'Disk', 3, 'EUR', ${now}, ${now})`,
    );
    await servedWithin(async () => sync.lines.some((line) => line.includes('costs.label')), 10_000, runs.said);
    if (engine === 'postgres')
      await runs.db.adminQuery(
        'SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1',
        [slotName(table.tableName)],
      );
    else
      for (const { ID } of await runs.db.adminQuery<{ ID: number }>(
        "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%' AND USER = $1",
        [new URL(runs.db.syncUrl).username],
      ))
        await runs.db.adminQuery(`KILL ${Number(ID)}`);
    await servedWithin(
      async () => sync.lines.some((line) => line.includes('answers again')) || ended !== 'it runs',
      10_000,
      runs.said,
    );
    await runs.db.query('DELETE FROM personal_access_tokens WHERE id = 71');
    const revoked = performance.now();
    await servedWithin(
      async () => (await api.get('/api/acme/projects', { token: BOB })).status === 401,
      10_000 - (performance.now() - revoked),
      () => `${runs.said()}; the sync: ${ended}`,
    );
  }, 60_000);
});
