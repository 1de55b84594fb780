import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { type RunningSync, servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * A mass delete of tokens in the source (docs/contract.md, section 9: "a mass delete" within 10 s),
 * once found slow beside large transactions (sync-transactions-at-scale.test.ts): every token 401 within
 * 10 s of the commit.
 */
const ADA = 'mass-ada-token-0000001';

describeSources('a mass delete of tokens', (engine) => {
  let db: SourceDatabase;
  let table: TestTable;
  let api: ReturnType<typeof tableApi>;
  let sync: RunningSync;
  // 3,000: each token of a first load costs the sync a few ms here, and the suite waits for them.
  const TEAMS = 20;
  const MASS = 3_000;

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, {
      teams: Array.from({ length: TEAMS }, (_, i) => ({
        id: i + 1,
        slug: `s${i + 1}`,
        name: `Team ${i + 1}`,
        user_id: i === 0 ? 10 : null,
      })),
      users: [{ id: 10, name: 'Ada' }],
      tokens: [
        { id: 70, user_id: 10, token: ADA, abilities: ['*'] },
        ...Array.from({ length: MASS }, (_, i) => ({
          id: 1_000 + i,
          user_id: 10,
          token: `mass-token-${1_000 + i}`,
          abilities: ['projects:read'],
        })),
      ],
      projects: Array.from({ length: TEAMS }, (_, i) => ({
        id: i + 1,
        team_id: i + 1,
        name: `P${i + 1}`,
        slug: `p${i + 1}`,
        created_at: '2026-01-02T03:04:05Z',
      })),
    });
    await setUp(db);
    table = await freshTable();
    api = tableApi(table);
    const started = performance.now();
    sync = startSync(db, table);
    await servedWithin(async () => sync.ready, 300_000);
    console.log(`${engine}: first load of ${TEAMS} teams took ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }, 400_000);
  afterAll(async () => {
    await sync?.stop();
    await db?.drop();
  });

  it('answers 401 within 10 s for every token of a mass DELETE of 3,000 tokens', async () => {
    const last = `mass-token-${1_000 + MASS - 1}`;
    expect((await api.get('/api/s1/projects', { token: last })).status).toBe(200);
    await db.query('DELETE FROM personal_access_tokens WHERE id >= 1000');
    const ms = await servedWithin(
      async () => (await api.get('/api/s1/projects', { token: last })).status === 401,
      120_000,
    );
    console.log(`${engine}: the mass revocation was served ${(ms / 1000).toFixed(1)} s after its commit`);
    expect(ms).toBeLessThan(10_000);
  }, 180_000);
});
