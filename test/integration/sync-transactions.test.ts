import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { NODE, ROOT } from '../support/import-process.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource, type SourceSnapshot } from '../support/source-seed.ts';
import { type RunningSync, servedWithin, settledBy, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';
import { countedTable } from '../support/writes.ts';

/**
 * What an attack on the sync found (docs/contract.md, section 9; docs/sync.md): slugs handed over
 * and swapped within a transaction, rights granted and taken away together, a user inserted again,
 * abilities as PHP writes them, a password in the URL's query, writes of passes that find nothing.
 * Each case is named after the behaviour the contract promises; each failed when written.
 */
const ADA = 'attack-ada-token-00001';
const BOB = 'attack-bob-token-00002';
const CAROL = 'attack-carol-token-003';
const DAVE = 'attack-dave-token-0004';
const ERIN = 'attack-erin-token-0005';
const FRANK = 'attack-frank-token-006';

function data(): SourceSnapshot {
  return {
    teams: [
      { id: 1, slug: 'acme', name: 'Acme', user_id: 10 },
      { id: 2, slug: 'globex', name: 'Globex', user_id: 11 },
      { id: 3, slug: 'initech', name: 'Initech', user_id: 10 },
      { id: 5, slug: 'hooli', name: 'Hooli', user_id: 10 },
      { id: 6, slug: 'umbrella', name: 'Umbrella', user_id: 10 },
      { id: 7, slug: 'alpha', name: 'Alpha', user_id: 10 },
      { id: 8, slug: 'beta', name: 'Beta', user_id: 10 },
    ],
    users: [
      { id: 10, name: 'Ada', teams: [1, 3, 5, 6] },
      { id: 11, name: 'Bob', teams: [2] },
      { id: 12, name: 'Carol', teams: [3] },
      { id: 13, name: 'Dave', teams: [5] },
      { id: 14, name: 'Erin', teams: [6] },
      { id: 15, name: 'Frank', teams: [7] },
    ],
    tokens: [
      { id: 70, user_id: 10, token: ADA, name: 'ada', abilities: ['*'] },
      { id: 71, user_id: 11, token: BOB, name: 'bob', abilities: ['*'] },
      { id: 72, user_id: 12, token: CAROL, name: 'carol', abilities: ['*'] },
      { id: 73, user_id: 13, token: DAVE, name: 'dave', abilities: ['projects:read'] },
      { id: 74, user_id: 14, token: ERIN, name: 'erin', abilities: ['daemons:read', 'projects:read'] },
      { id: 75, user_id: 15, token: FRANK, name: 'frank', abilities: ['*'] },
    ],
    environments: [
      { id: 5, team_id: 5, name: 'production' },
      { id: 6, team_id: 6, name: 'production' },
    ],
    servers: [
      { id: 5, team_id: 5, name: 'web-5', monthly_cost: '10.00', currency: 'EUR' },
      { id: 6, team_id: 6, name: 'web-6', monthly_cost: '10.00', currency: 'EUR' },
    ],
    projects: [
      { id: 100, team_id: 1, name: 'Acme site', slug: 'acme-site', created_at: '2026-01-03T00:00:00Z' },
      { id: 200, team_id: 2, name: 'Globex site', slug: 'globex-site', created_at: '2026-01-03T00:00:00Z' },
      { id: 300, team_id: 3, name: 'Initech site', slug: 'initech-site', created_at: '2026-01-03T00:00:00Z' },
    ],
    daemons: [
      {
        id: 5,
        environment_id: 5,
        server_id: 5,
        name: 'queue',
        command: 'php artisan queue:work',
        username: 'forge',
        directory: '/home/forge/hooli',
        processes: 1,
      },
      {
        id: 6,
        environment_id: 6,
        server_id: 6,
        name: 'queue',
        command: 'php artisan queue:work',
        username: 'forge',
        directory: '/home/forge/umbrella',
        processes: 1,
      },
    ],
  };
}

describeSources('a transaction served whole', (engine) => {
  let db: SourceDatabase;
  let table: TestTable;
  let api: ReturnType<typeof tableApi>;
  let sync: RunningSync;
  const now = engine === 'postgres' ? 'now()' : 'NOW()';
  const begin = engine === 'postgres' ? 'BEGIN' : 'START TRANSACTION';

  /** Statements in one transaction of the application role. */
  const transaction = async (statements: string[]) => {
    const session = await db.session();
    try {
      await session.query(begin);
      for (const statement of statements) await session.query(statement);
      await session.query('COMMIT');
    } finally {
      await session.close();
    }
  };

  let settled: () => Promise<void>;

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, data());
    await setUp(db);
    table = await freshTable();
    api = tableApi(table);
    settled = settledBy(db, api, { id: 3, segment: '3', token: ADA });
    sync = startSync(db, table);
    await servedWithin(async () => (await api.get('/api/acme/projects', { token: ADA })).status === 200, 30_000);
  }, 90_000);
  afterAll(async () => {
    await sync?.stop();
    await db?.drop();
  });

  it('serves a slug handed over between two teams in one transaction within 10 s, when the taker also changed first', async () => {
    // Team 1 is renamed (any change of team 1 recorded first), team 2 gives up its slug, team 1 takes it.
    await transaction([
      `UPDATE teams SET name = 'Acme Corp' WHERE id = 1`,
      `UPDATE teams SET slug = 'globex-old' WHERE id = 2`,
      `UPDATE teams SET slug = 'globex' WHERE id = 1`,
    ]);
    // Bob (team 2) follows his team to its new slug; Ada (team 1) reads team 1 under "globex".
    await servedWithin(async () => (await api.get('/api/globex-old/projects', { token: BOB })).status === 200);
    let last: unknown;
    await servedWithin(
      async () => {
        const answer = await api.get('/api/globex/projects', { token: ADA });
        last = [answer.status, answer.body?.data?.map?.((p: { name: string }) => p.name)];
        return answer.status === 200 && answer.body.data[0]?.name === 'Acme site';
      },
      15_000,
      () => `last answer ${JSON.stringify(last)}; the sync said ${JSON.stringify(sync.lines)}`,
    );
  }, 40_000);

  it('serves a user deleted and then inserted again (same id) within 10 s: her membership and her token come back', async () => {
    await db.query('DELETE FROM users WHERE id = 12');
    await servedWithin(async () => (await api.get('/api/initech/projects', { token: CAROL })).status === 401);
    await db.query(
      `INSERT INTO users (id, name, email, password, created_at, updated_at)
       VALUES (12, 'Carol', 'carol@example.test', 'x', ${now}, ${now})`,
    );
    let last = 0;
    await servedWithin(
      async () => {
        last = (await api.get('/api/initech/projects', { token: CAROL })).status;
        return last === 200;
      },
      15_000,
      () => `Carol's token last got ${last}`,
    );
  }, 40_000);

  it('never lets a token read a team with an ability granted in the same transaction that removed its user from the team', async () => {
    // Dave is a member of hooli with projects:read only: daemons are 403 to him. One transaction takes
    // him out of hooli and gives his token "*". At no state of the source could he read hooli's daemons.
    const seen: number[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) seen.push((await api.get('/api/hooli/daemons', { token: DAVE })).status);
    })();
    try {
      expect((await api.get('/api/hooli/daemons', { token: DAVE })).status).toBe(403);
      await transaction([
        'DELETE FROM team_user WHERE team_id = 5 AND user_id = 13',
        `UPDATE personal_access_tokens SET abilities = '["*"]' WHERE id = 73`,
      ]);
      await servedWithin(async () => (await api.get('/api/hooli/daemons', { token: DAVE })).status === 404);
      await settled(); // the batch that applied it is over, watched all along
    } finally {
      polling = false;
      await poller;
    }
    const counts = Object.fromEntries([...new Set(seen)].map((s) => [s, seen.filter((x) => x === s).length]));
    expect(counts[200] ?? 0, `answers seen while the change was applied: ${JSON.stringify(counts)}`).toBe(0);
  }, 40_000);

  it('never lets a user moved from one team to another in one transaction read both teams', async () => {
    // Frank moves from alpha to beta in one transaction (the new membership written first). In the
    // source he is never a member of both; the API must not answer 200 on beta and then 200 on alpha.
    const timeline: { alpha: number; beta: number }[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const beta = (await api.get('/api/beta/projects', { token: FRANK })).status;
        const alpha = (await api.get('/api/alpha/projects', { token: FRANK })).status;
        timeline.push({ alpha, beta });
      }
    })();
    try {
      await servedWithin(async () => timeline.length > 3);
      await transaction([
        `INSERT INTO team_user (team_id, user_id, role, created_at, updated_at) VALUES (8, 15, 'editor', ${now}, ${now})`,
        'DELETE FROM team_user WHERE team_id = 7 AND user_id = 15',
      ]);
      await servedWithin(async () => (await api.get('/api/alpha/projects', { token: FRANK })).status === 404);
      await settled(); // the batch that applied it is over, watched all along
    } finally {
      polling = false;
      await poller;
    }
    const both = timeline.filter(({ alpha, beta }) => alpha === 200 && beta === 200).length;
    expect(both, `beta read, then alpha still read, in ${both} of ${timeline.length} rounds`).toBe(0);
  }, 40_000);

  it('takes an ability away within 10 s when Laravel narrows a token by array_diff (abilities written as a JSON object)', async () => {
    // PHP's json_encode(array_diff(['daemons:read', 'projects:read'], ['daemons:read'])) is {"1":"projects:read"};
    // Sanctum's can() reads it as ['projects:read'].
    expect((await api.get('/api/umbrella/daemons', { token: ERIN })).status).toBe(200);
    await db.query(`UPDATE personal_access_tokens SET abilities = '{"1":"projects:read"}' WHERE id = 74`);
    let last = 0;
    await servedWithin(
      async () => {
        last = (await api.get('/api/umbrella/daemons', { token: ERIN })).status;
        return last === 403 || last === 401;
      },
      12_000,
      () => `Erin's token still reads daemons (${last}); the sync said ${JSON.stringify(sync.lines)}`,
    );
  }, 40_000);

  it('answers 401 within 10 s for a token whose tokenable_type stops being App\\Models\\User', async () => {
    expect((await api.get('/api/globex-old/projects', { token: BOB })).status).toBe(200);
    await db.query(`UPDATE personal_access_tokens SET tokenable_type = 'App\\Models\\Team' WHERE id = 71`);
    await servedWithin(async () => (await api.get('/api/globex-old/projects', { token: BOB })).status === 401);
  }, 40_000);

  it('answers 401 within 10 s for tokens removed by TRUNCATE personal_access_tokens (the log names no row)', async () => {
    // Last case of this block that reads tokens: every token of the source goes.
    // Team 1 by its id: an earlier case gave it another slug.
    expect((await api.get('/api/1/projects', { token: ADA })).status).toBe(200);
    await db.query('TRUNCATE personal_access_tokens');
    await servedWithin(async () => (await api.get('/api/1/projects', { token: ADA })).status === 401);
  }, 40_000);
});

describeSources('the sync, with a full pass every 2 s', (engine) => {
  let db: SourceDatabase;
  let table: TestTable;
  let counted: ReturnType<typeof countedTable>;
  let api: ReturnType<typeof tableApi>;
  let sync: RunningSync;
  const begin = engine === 'postgres' ? 'BEGIN' : 'START TRANSACTION';
  const TEAMS = 120;

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, {
      teams: Array.from({ length: TEAMS }, (_, i) => ({
        id: i + 1,
        slug: `team-${i + 1}`,
        name: `Team ${i + 1}`,
        user_id: 10,
      })),
      users: [
        { id: 10, name: 'Ada' },
        { id: 11, name: 'Bob', teams: [2] },
      ],
      tokens: [
        { id: 70, user_id: 10, token: ADA, abilities: ['*'] },
        { id: 71, user_id: 11, token: BOB, abilities: ['*'] },
      ],
      projects: Array.from({ length: TEAMS }, (_, i) => ({
        id: i + 1,
        team_id: i + 1,
        name: `Project of ${i + 1}`,
        slug: `p${i + 1}`,
        created_at: '2026-01-02T03:04:05Z',
      })),
    });
    await setUp(db);
    table = await freshTable();
    counted = countedTable(table);
    api = tableApi(table);
    sync = startSync(db, counted.table, { fullPassEveryMs: 2_000 });
    await servedWithin(
      async () => (await api.get(`/api/team-${TEAMS}/projects`, { token: ADA })).status === 200,
      60_000,
    );
    await servedWithin(async () => sync.ready, 60_000); // the first pass's last token writes
  }, 120_000);
  afterAll(async () => {
    await sync?.stop();
    await db?.drop();
  });

  it('writes at most the lease (one write every 15 s) over full passes that find nothing changed, and nothing for a no-op UPDATE', async () => {
    const count = counted.restart();
    const started = performance.now();
    await db.query('UPDATE projects SET name = name'); // every row, same values
    await db.query('UPDATE teams SET slug = slug, name = name');
    // Two whole full passes begun after the updates (and the log's changes read meanwhile).
    for (let pass = 0; pass < 3; pass++) await sync.nextFullPass();
    expect(count.data, JSON.stringify(count.keys.filter((k) => !k.startsWith('IMPORT') && !k.startsWith('SYNC')))).toBe(
      0,
    );
    // At most one renewal of the sync's lease each 15 s, and never a team's writers' lock.
    const renewals = Math.ceil((performance.now() - started) / 15_000);
    expect(count.keys.length, JSON.stringify(count)).toBeLessThanOrEqual(renewals);
    expect(
      count.keys.every((key) => key === 'SYNC LEASE'),
      JSON.stringify(count.keys),
    ).toBe(true);
  }, 30_000);

  it('serves two teams that swap slugs in one transaction (through a third slug) within 10 s, or at the latest after the next full pass', async () => {
    const session = await db.session();
    try {
      await session.query(begin);
      await session.query(`UPDATE teams SET slug = 'swap-tmp' WHERE id = 1`);
      await session.query(`UPDATE teams SET slug = 'team-1' WHERE id = 2`);
      await session.query(`UPDATE teams SET slug = 'team-2' WHERE id = 1`);
      await session.query('COMMIT');
    } finally {
      await session.close();
    }
    // Bob is a member of team 2 only: he reads it under its new slug "team-1".
    let last = 0;
    await servedWithin(
      async () => {
        last = (await api.get('/api/team-1/projects', { token: BOB })).status;
        return last === 200;
      },
      25_000,
      () => `last ${last}; the sync said ${JSON.stringify(sync.lines)}`,
    );
  }, 60_000);

  it('names a refused row once, not again at every full pass', async () => {
    await db.query(`UPDATE teams SET name = 'Bad\u0001' WHERE id = 3`);
    for (let pass = 0; pass < 3; pass++) await sync.nextFullPass(); // two whole full passes after it
    const line = 'teams 3: name contains a control character';
    expect(
      sync.lines.filter((said) => said === line),
      JSON.stringify(sync.lines),
    ).toEqual([line]);
    await db.query(`UPDATE teams SET name = 'Team 3' WHERE id = 3`);
  }, 30_000);
});

describeSources('the sync command and the URL it is given', (engine) => {
  let db: SourceDatabase;
  let table: TestTable;
  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    table = await freshTable();
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  it("never prints a password given as the URL's password parameter (?password=…, which both drivers read)", () => {
    const url = new URL(db.syncUrl);
    const password = decodeURIComponent(url.password);
    url.password = '';
    url.searchParams.set('password', password);
    const run = spawnSync(NODE, ['commands/sync.ts', '--once', '--source', url.toString()], {
      cwd: ROOT,
      env: { ...process.env, TABLE_NAME: table.tableName, DYNAMODB_ENDPOINT: table.endpoint },
      encoding: 'utf8',
      timeout: 60_000,
    });
    const out = `${run.stdout}\n${run.stderr}`;
    expect(out, out).not.toContain(password);
  }, 70_000);
});
