import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { createToken } from '../../commands/tokens/tokens.ts';
import { seedSource, sha256, type SourceSnapshot } from '../support/source-seed.ts';
import { type RunningSync, servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';
import { onEveryWrite } from '../../shared/write/writer.ts';

/**
 * The sync (docs/contract.md, section 9) against real PostgreSQL and MariaDB servers the suite
 * started: each kind of change committed in the source is answered by the API (the real handlers,
 * over the synced table) within 10 seconds of its commit, deletes and raw SQL included.
 */
const SECRET = 'ada-secret-token-0001';
const BOB = 'bob-secret-token-0002';

function laravelData(): SourceSnapshot {
  return {
    teams: [
      { id: 1, slug: 'acme', name: 'Acme', user_id: 10 },
      { id: 2, slug: 'globex', name: 'Globex', user_id: 11 },
    ],
    users: [
      { id: 10, name: 'Ada', teams: [1] },
      { id: 11, name: 'Bob', teams: [1, 2] },
    ],
    tokens: [
      { id: 70, user_id: 10, token: SECRET, name: 'cli', abilities: ['*'] },
      { id: 71, user_id: 11, token: BOB, name: 'bob', abilities: ['projects:read', 'finances:read'] },
    ],
    environments: [{ id: 5, team_id: 1, name: 'production' }],
    servers: [{ id: 7, team_id: 1, name: 'web-1', monthly_cost: '24.15', currency: 'EUR' }],
    clients: [{ id: 3, team_id: 1, name: 'Client A' }],
    projects: [
      { id: 100, team_id: 1, client_id: 3, name: 'Site', slug: 'site', created_at: '2026-01-02T05:04:05+02:00' },
      { id: 101, team_id: 1, name: 'Shop', slug: 'shop', created_at: '2026-01-03T00:00:00Z' },
      { id: 200, team_id: 2, name: 'Globex site', slug: 'globex-site', created_at: '2026-01-03T00:00:00Z' },
    ],
    daemons: [
      {
        id: 1,
        environment_id: 5,
        server_id: 7,
        name: 'queue',
        command: 'php artisan queue:work',
        username: 'forge',
        directory: '/home/forge/site',
        processes: 2,
      },
    ],
    costs: [{ team_id: 1, label: 'Backups', amount: '5.00', currency: 'EUR' }],
  };
}

describeSources('the sync', (engine) => {
  let db: SourceDatabase;
  let table: TestTable;
  let api: ReturnType<typeof tableApi>;
  let sync: RunningSync;
  const now = engine === 'postgres' ? 'now()' : 'NOW()';

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, laravelData());
    await setUp(db);
    table = await freshTable();
    api = tableApi(table);
    sync = startSync(db, table);
    await servedWithin(async () => (await api.get('/api/acme/projects', { token: SECRET })).status === 200, 30_000);
    await servedWithin(async () => sync.ready, 30_000); // its token step follows the teams
  }, 60_000);
  afterAll(async () => {
    await sync?.stop();
    await db?.drop();
  });

  const projectNames = async (team = 'acme', token = SECRET) => {
    const answer = await api.get(`/api/${team}/projects?per_page=50`, { token });
    return answer.status === 200 ? (answer.body.data as { name: string }[]).map((p) => p.name) : answer.status;
  };

  it('serves the source after its first full pass, as the API answers for Laravel', async () => {
    const page = await api.get('/api/acme/projects', { token: SECRET });
    expect(page.body.data).toEqual([
      { id: 100, name: 'Site', slug: 'site', client_id: 3, created_at: '2026-01-02T03:04:05+00:00' },
      { id: 101, name: 'Shop', slug: 'shop', client_id: null, created_at: '2026-01-03T00:00:00+00:00' },
    ]);
    const finances = await api.get('/api/acme/finances', { token: SECRET });
    expect(finances.body.totals).toEqual({ EUR: 29.15 });
    const daemons = await api.get('/api/1/daemons', { token: SECRET });
    expect(daemons.body.data[0]).toMatchObject({ id: 1, name: 'queue', processes: 2, environment_id: 5, server_id: 7 });
    // The owner is a member; Ada is not a member of Globex.
    expect((await api.get('/api/globex/projects', { token: SECRET })).status).toBe(404);
    expect((await api.get('/api/globex/projects', { token: BOB })).status).toBe(200);
  });

  it('serves a project inserted by Eloquent within 10 s', async () => {
    await db.query(
      `INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES (102, 1, 'Blog', 'blog', ${now}, ${now})`,
    );
    const ms = await servedWithin(
      async () => Array.isArray(await projectNames()) && ((await projectNames()) as string[]).includes('Blog'),
    );
    expect(ms).toBeLessThan(10_000);
  });

  it('serves a raw UPDATE that leaves updated_at alone', async () => {
    await db.query(`UPDATE projects SET name = 'Site renamed' WHERE id = 100`);
    await servedWithin(async () => ((await projectNames()) as string[]).includes('Site renamed'));
  });

  it('serves a rename that changes only the case of a name (a case-insensitive collation calls them equal)', async () => {
    await db.query(`UPDATE projects SET name = 'SITE RENAMED' WHERE id = 100`);
    await servedWithin(async () => ((await projectNames()) as string[]).includes('SITE RENAMED'));
  });

  it('serves a hard delete', async () => {
    await db.query('DELETE FROM projects WHERE id = 101');
    await servedWithin(async () => !((await projectNames()) as string[]).includes('Shop'));
  });

  it('serves two transactions that commit in another order than they began', async () => {
    const first = await db.session();
    const second = await db.session();
    try {
      await first.query(engine === 'postgres' ? 'BEGIN' : 'START TRANSACTION');
      await first.query(
        `INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES (110, 1, 'Early', 'early', ${now}, ${now})`,
      );
      await second.query(
        `INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES (111, 1, 'Late', 'late', ${now}, ${now})`,
      );
      await servedWithin(async () => ((await projectNames()) as string[]).includes('Late'));
      await first.query('COMMIT');
      await servedWithin(async () => ((await projectNames()) as string[]).includes('Early'));
    } finally {
      await first.close();
      await second.close();
    }
  });

  it("serves a cost line's change, and a project page revalidated meanwhile still answers 304", async () => {
    const page = await api.get('/api/acme/projects', { token: SECRET });
    await db.query(`UPDATE costs SET amount = '6.00' WHERE team_id = 1`);
    await servedWithin(async () => (await api.get('/api/acme/finances', { token: SECRET })).body.totals.EUR === 30.15);
    const again = await api.get('/api/acme/projects', { token: SECRET, ifNoneMatch: page.headers.ETag });
    expect(again.status).toBe(304);
  });

  it('answers 401 within 10 s for a token Sanctum revoked (deleted), and for one expired in the source', async () => {
    await db.query(`INSERT INTO personal_access_tokens (id, tokenable_type, tokenable_id, name, token, abilities, created_at, updated_at)
      SELECT 72, tokenable_type, tokenable_id, 'second', '${'b'.repeat(64)}', '["*"]', ${now}, ${now} FROM personal_access_tokens WHERE id = 71`);
    await db.query('DELETE FROM personal_access_tokens WHERE id = 71');
    await servedWithin(async () => (await api.get('/api/acme/projects', { token: BOB })).status === 401);
    await db.query(`UPDATE personal_access_tokens SET expires_at = '2020-01-01 00:00:00' WHERE id = 70`);
    await servedWithin(async () => (await api.get('/api/acme/projects', { token: SECRET })).status === 401);
    await db.query('UPDATE personal_access_tokens SET expires_at = NULL WHERE id = 70');
    await servedWithin(async () => (await api.get('/api/acme/projects', { token: SECRET })).status === 200);
  });

  it("does not count Sanctum's last_used_at as a change: nothing of the token is written", async () => {
    // Sanctum's save on every request to the old service: last_used_at, and the updated_at it writes with it.
    const written: string[] = [];
    onEveryWrite(table.doc, (key) => void written.push(String(key.pk)));
    await db.query(`UPDATE personal_access_tokens SET last_used_at = ${now}, updated_at = ${now} WHERE id = 70`);
    // A change after it: once that is served, the update before it in the log was taken too.
    await db.query(`UPDATE projects SET name = 'After last_used_at' WHERE id = 100`);
    await servedWithin(async () => String(await projectNames()).includes('After last_used_at'));
    expect(written.filter((pk) => /^(TOKEN|SANCTUM|USER)#/.test(pk))).toEqual([]);
  });

  it("serves a cascade the engine's triggers may not see: a server deleted takes its daemons", async () => {
    // MySQL's cascades fire no trigger: the servers' own trigger records the daemons that named it.
    await db.query('DELETE FROM servers WHERE id = 7');
    await servedWithin(async () => (await api.get('/api/acme/daemons', { token: SECRET })).body.meta.total === 0);
    expect(
      (await api.get('/api/acme/finances', { token: SECRET })).body.data.map((l: { label: string }) => l.label),
    ).toEqual(['Backups']);
  });

  it("serves a new owner: the team's owner is a member", async () => {
    await db.query(
      `INSERT INTO users (id, name, email, password, created_at, updated_at) VALUES (12, 'Cy', 'cy@example.test', 'x', ${now}, ${now})`,
    );
    await db.query(`INSERT INTO personal_access_tokens (id, tokenable_type, tokenable_id, name, token, abilities, created_at, updated_at)
      SELECT 73, tokenable_type, 12, 'cy', '${sha256('cy-secret-token-00003')}', '["*"]', ${now}, ${now}
      FROM personal_access_tokens WHERE id = 70`);
    await servedWithin(
      async () => (await api.get('/api/globex/projects', { token: 'cy-secret-token-00003' })).status === 404,
    );
    await db.query('UPDATE teams SET user_id = 12 WHERE id = 2');
    await servedWithin(
      async () => (await api.get('/api/globex/projects', { token: 'cy-secret-token-00003' })).status === 200,
    );
  });

  it('takes a deleted user out of its teams, and its tokens with it', async () => {
    // Jetstream declares no foreign key on team_user, and Sanctum's tokens belong to a morph: both stay behind.
    await db.query('DELETE FROM users WHERE id = 12');
    await servedWithin(
      async () => (await api.get('/api/globex/projects', { token: 'cy-secret-token-00003' })).status === 401,
    );
  });

  it('leaves alone a token issued here with token create', async () => {
    const secret = await createToken(table.doc, table.tableName, {
      userId: 10,
      abilities: ['projects:read'],
      name: 'issued here',
      expiresAt: null,
    });
    expect((await api.get('/api/acme/projects', { token: secret })).status).toBe(200);
    const applied = sync.nextBatch();
    await db.query(`UPDATE personal_access_tokens SET name = 'renamed' WHERE id = 70`);
    await applied; // the batch that applied the rename
    expect((await api.get('/api/acme/projects', { token: secret })).status).toBe(200);
  });

  it('gives its metrics once per batch that changed something', async () => {
    const metrics = sync.metrics.length;
    await db.query(`UPDATE projects SET name = 'Metric' WHERE id = 100`);
    await servedWithin(async () => sync.metrics.length > metrics);
    const line = sync.metrics.at(-1)!;
    expect(line).toMatchObject({
      SyncChangesApplied: expect.any(Number),
      SyncItemsWritten: expect.any(Number),
      SyncRowsRefused: 0,
      SyncSourceErrors: 0,
    });
    expect((line as { SyncLag: number }).SyncLag).toBeGreaterThanOrEqual(0);
    expect((line as { SyncItemsWritten: number }).SyncItemsWritten).toBeGreaterThan(0);
  });

  it('says the log the source holds back for it once a minute, while it applies changes and while idle', async () => {
    // Its own sync (and slot), on a clock the test moves a minute on.
    let offset = 0;
    const watched = startSync(db, await freshTable(), { clock: () => Date.now() + offset });
    try {
      await watched.readyNow;
      const heldBack = () => watched.metrics.filter((line) => line.SyncLogRetainedBytes !== undefined).length;
      const said = heldBack();
      offset += 61_000;
      // Busy: a change every turn, until the minute's line comes.
      await servedWithin(async () => {
        await db.query(`UPDATE projects SET name = 'Held ${offset++}' WHERE id = 101`);
        return heldBack() > said;
      });
      offset += 61_000;
      await servedWithin(async () => heldBack() > said + 1); // idle
      const lines = watched.metrics.filter((line) => line.SyncLogRetainedBytes !== undefined);
      for (const line of lines.slice(-2)) expect(line.SyncLogRetainedBytes).toBeGreaterThanOrEqual(0);
    } finally {
      await watched.stop();
    }
  });

  it('answers 404 within 10 s to a member removed from the team, and to a deleted team', async () => {
    await db.query('INSERT INTO team_user (team_id, user_id, role) VALUES (2, 10, ?)'.replace('?', "'editor'"));
    await servedWithin(async () => (await api.get('/api/globex/projects', { token: SECRET })).status === 200);
    await db.query('DELETE FROM team_user WHERE team_id = 2 AND user_id = 10');
    await servedWithin(async () => (await api.get('/api/globex/projects', { token: SECRET })).status === 404);
    await db.query('DELETE FROM projects WHERE team_id = 2');
    await db.query('DELETE FROM team_user WHERE team_id = 2');
    await db.query('DELETE FROM teams WHERE id = 2');
    await servedWithin(async () => (await api.get('/api/2/finances', { token: SECRET })).status === 404);
  });
});
