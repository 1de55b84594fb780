import { afterAll, beforeAll, it } from 'vitest';
import { slotName } from '../../shared/sync/log/reader.ts';
import { freshTable } from '../support/dynamodb.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource, type SourceSnapshot } from '../support/source-seed.ts';
import { type RunningSync, servedWithin, setUp, startSync } from '../support/sync.ts';
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
  let db: SourceDatabase;
  const syncs: RunningSync[] = [];
  const said = () => `the syncs said: ${JSON.stringify(syncs.map((sync) => sync.lines))}`;
  const now = engine === 'postgres' ? 'now()' : 'NOW()';

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, laravelData());
    await setUp(db);
  }, 60_000);
  afterAll(async () => {
    for (const sync of syncs) await sync.stop();
    await db?.drop();
  });

  it('answers 401 within 10 s for a token revoked after a deployed invocation took over while costs.label was renamed', async () => {
    const table = await freshTable();
    const api = tableApi(table);
    let deadline = false;
    const first = startSync(db, table, { until: () => deadline });
    syncs.push(first);
    await first.readyNow;
    await db.query('ALTER TABLE costs RENAME COLUMN label TO title');
    // A cost line added meanwhile: the first run finds the column gone, says so, and keeps the finances.
    await db.query(
      `INSERT INTO costs (team_id, title, amount, currency, created_at, updated_at) VALUES (1, 'Disk', 2, 'EUR', ${now}, ${now})`,
    );
    await servedWithin(async () => first.lines.some((line) => line.includes('costs.label')), 10_000, said);
    // The invocation's deadline; the next takes over.
    deadline = true;
    await first.done;
    const next = startSync(db, table, { changesFirst: true });
    syncs.push(next);
    let ended = 'it runs';
    next.done.then(
      () => (ended = 'it ended'),
      (error: Error) => (ended = `it ended: ${error.message}`),
    );
    await db.query('DELETE FROM personal_access_tokens WHERE id = 70');
    const revoked = performance.now();
    await servedWithin(
      async () => (await api.get('/api/acme/projects', { token: ADA })).status === 401,
      10_000 - (performance.now() - revoked),
      () => `${said()}; the run that took over: ${ended}`,
    );
    // The column back: the finances kept meanwhile follow, the cost line added meanwhile with them.
    await db.query('ALTER TABLE costs RENAME COLUMN title TO label');
    const back = performance.now();
    await servedWithin(
      async () => (await api.get('/api/acme/finances', { token: BOB })).body?.totals?.EUR === 7,
      10_000 - (performance.now() - back),
      said,
    );
  }, 60_000);

  it("answers 401 within 10 s for a token revoked after the log's connection was killed while costs.label was renamed", async () => {
    const table = await freshTable();
    const api = tableApi(table);
    const sync = startSync(db, table);
    syncs.push(sync);
    let ended = 'it runs';
    sync.done.then(
      () => (ended = 'it ended'),
      (error: Error) => (ended = `it ended: ${error.message}`),
    );
    await sync.readyNow;
    await servedWithin(async () => (await api.get('/api/acme/projects', { token: BOB })).status === 200);
    await db.query('ALTER TABLE costs RENAME COLUMN label TO title');
    await db.query(
      `INSERT INTO costs (team_id, title, amount, currency, created_at, updated_at) VALUES (1, 'Disk', 3, 'EUR', ${now}, ${now})`,
    );
    await servedWithin(async () => sync.lines.some((line) => line.includes('costs.label')), 10_000, said);
    if (engine === 'postgres')
      await db.adminQuery('SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1', [
        slotName(table.tableName),
      ]);
    else
      for (const { ID } of await db.adminQuery<{ ID: number }>(
        "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%' AND USER = $1",
        [new URL(db.syncUrl).username],
      ))
        await db.adminQuery(`KILL ${Number(ID)}`);
    await servedWithin(
      async () => sync.lines.some((line) => line.includes('answers again')) || ended !== 'it runs',
      10_000,
      said,
    );
    await db.query('DELETE FROM personal_access_tokens WHERE id = 71');
    const revoked = performance.now();
    await servedWithin(
      async () => (await api.get('/api/acme/projects', { token: BOB })).status === 401,
      10_000 - (performance.now() - revoked),
      () => `${said()}; the sync: ${ended}`,
    );
  }, 60_000);
});
