import { afterAll, beforeAll, expect, it } from 'vitest';
import { type AppWriters, startAppWriters } from '../support/app-writers.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource, type SourceSnapshot } from '../support/source-seed.ts';
import { type RunningSync, servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * The sync keeps up with an app at full speed, and the app never notices it (docs/contract.md,
 * section 9: the sync adds no statement, lock or wait to the app's transactions; every change is
 * served within 10 s). Sixteen writers, each on a connection of its own as the app's role, commit as
 * fast as the server lets them for 15 s (the benchmark does a minute): projects inserted and renamed
 * in four teams, and Sanctum's last_used_at written on every request. Not one of the app's statements
 * fails or deadlocks, and 10 s after the writers stop the API answers what the source holds, project
 * by project.
 */
const TEAMS = [1, 2, 3, 4];
const WRITERS = 16;
const WRITING_MS = 15_000;
const TOKEN = (writer: number) => `keeps-up-token-of-writer-${String(writer).padStart(2, '0')}`;

function laravelData(): SourceSnapshot {
  return {
    teams: TEAMS.map((id) => ({ id, slug: `k${id}`, name: `Team ${id}`, user_id: 10 })),
    users: [{ id: 10, name: 'Ada', teams: TEAMS }],
    // A token per writer: each request of the app writes its token's last_used_at.
    tokens: Array.from({ length: WRITERS }, (_, writer) => ({
      id: 100 + writer,
      user_id: 10,
      token: TOKEN(writer),
      abilities: ['*'],
    })),
    // A project per writer to rename from the start.
    projects: Array.from({ length: WRITERS }, (_, writer) => ({
      id: 1_000 + writer,
      team_id: TEAMS[writer % TEAMS.length]!,
      name: `Writer ${writer}`,
      slug: `writer-${writer}`,
    })),
  };
}

describeSources('the sync, with sixteen app writers at full speed', (engine) => {
  let db: SourceDatabase;
  let table: TestTable;
  let sync: RunningSync;
  const now = engine === 'postgres' ? 'now()' : 'NOW()';

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, laravelData());
    await setUp(db);
    table = await freshTable();
    sync = startSync(db, table);
    await sync.readyNow;
  }, 60_000);
  afterAll(async () => {
    await sync?.stop();
    await db?.drop();
  });

  it('keeps up: no app statement fails or deadlocks, and all of it is served within 10 s of the last commit', async () => {
    // Each writer works in its team on its own projects (as requests of different users do): one in
    // ten statements inserts a project, three rename the one it inserted last, six are last_used_at.
    const last = Array.from({ length: WRITERS }, (_, writer) => 1_000 + writer);
    const app: AppWriters = await startAppWriters(db, WRITERS, (writer, n) => {
      const team = TEAMS[writer % TEAMS.length]!;
      const step = n % 10;
      if (step === 0) {
        last[writer] = 100_000 + writer * 100_000 + n;
        return {
          sql: `INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES ($1, $2, $3, $3, ${now}, ${now})`,
          params: [last[writer], team, `p-${writer}-${n}`],
        };
      }
      if (step <= 3)
        return { sql: 'UPDATE projects SET name = $1 WHERE id = $2', params: [`r-${writer}-${n}`, last[writer]] };
      return {
        sql: `UPDATE personal_access_tokens SET last_used_at = ${now}, updated_at = ${now} WHERE id = $1`,
        params: [100 + writer],
      };
    });
    await new Promise((resolve) => setTimeout(resolve, WRITING_MS)); // the app's working time, not a wait for the sync
    await app.stop(); // every statement committed: the last commit is now
    const stopped = performance.now();

    expect(app.failures.filter((f) => f.code === '40P01' || f.code === 'ER_LOCK_DEADLOCK')).toEqual([]);
    expect(app.failures).toEqual([]);
    expect(app.done).toBeGreaterThan(WRITERS * 10);

    // What the source holds now, team by team, against what the API answers.
    const source = new Map<number, string[]>();
    for (const team of TEAMS)
      source.set(
        team,
        (
          await db.query<{ id: unknown; name: string }>(
            'SELECT id, name FROM projects WHERE team_id = $1 ORDER BY id',
            [team],
          )
        ).map((row) => `${Number(row.id)} ${row.name}`),
      );
    const api = tableApi(table);
    const served = async (team: number) => {
      const all: string[] = [];
      for (let page = 1; ; page++) {
        const answer = await api.get(`/api/k${team}/projects?per_page=50&page=${page}`, { token: TOKEN(0) });
        if (answer.status !== 200) return [`${answer.status}`];
        all.push(...answer.body.data.map((p: { id: number; name: string }) => `${p.id} ${p.name}`));
        if (page >= answer.body.meta.last_page) return all;
      }
    };
    const totals = async () =>
      Promise.all(
        TEAMS.map(
          async (team) => (await api.get(`/api/k${team}/projects?per_page=1`, { token: TOKEN(0) })).body?.meta?.total,
        ),
      );
    let seen: string[][] = [];
    const ms = await servedWithin(
      async () => {
        // Cheap first: the counts; then every project, in id order, by name.
        if (JSON.stringify(await totals()) !== JSON.stringify(TEAMS.map((team) => source.get(team)!.length)))
          return false;
        seen = await Promise.all(TEAMS.map(served));
        return TEAMS.every((team, i) => JSON.stringify(seen[i]) === JSON.stringify(source.get(team)));
      },
      10_000 - (performance.now() - stopped),
      () =>
        `the API's totals differ, or these projects: ${JSON.stringify(
          TEAMS.map((team, i) => (seen[i] ?? []).filter((line) => !source.get(team)!.includes(line)).slice(0, 5)),
        )}; the sync said ${JSON.stringify(sync.lines)}`,
    );
    console.log(
      `${engine}: ${app.done} app statements in ${WRITING_MS / 1000} s (the slowest ${Math.round(app.slowest.ms)} ms); ` +
        `${[...source.values()].reduce((n, list) => n + list.length, 0)} projects served ${Math.round(performance.now() - stopped)} ms after the last commit (${Math.round(ms)} ms of polling)`,
    );
    expect(sync.lines).toEqual([]);
  }, 90_000);
});
