import { afterAll, beforeAll, expect, it } from 'vitest';
import { SyncRefused } from '../../shared/sync/run.ts';
import { TeamLocks } from '../../shared/write/team-locks.ts';
import { freshTable } from '../support/dynamodb.ts';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { startMariaDb } from '../support/source-servers.ts';
import { servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * Faults (docs/contract.md, section 9): a source that stops answering is said once, the API goes on
 * answering from the last state, and the sync catches up when the source is back, losing no change;
 * what needs a person (credentials, a schema that differs, a source not prepared, a role that lacks
 * a privilege, a second sync) ends it at once in one line, the password never shown; an import and
 * a sync never interleave.
 */
const SECRET = 'faults-secret-token-1';
const data = {
  teams: [{ id: 1, slug: 'acme', name: 'Acme', user_id: 10 }],
  users: [{ id: 10, name: 'Ada', teams: [1] }],
  tokens: [{ id: 70, user_id: 10, token: SECRET, abilities: ['*'] }],
  projects: [{ id: 100, team_id: 1, name: 'Site', slug: 'site', created_at: '2026-01-02T03:04:05Z' }],
};

describeSources('the sync under faults', (engine) => {
  let db: SourceDatabase;
  const now = engine === 'postgres' ? 'now()' : 'NOW()';
  const addProject = (id: number, name: string) =>
    db.query(
      `INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES (${id}, 1, '${name}', 's', ${now}, ${now})`,
    );

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, data);
    await setUp(db);
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  /** The sync's role's URL through `proxy` instead of straight to the server. */
  const through = (proxy: FaultProxy) => {
    const url = new URL(db.syncUrl);
    url.host = `127.0.0.1:${proxy.port}`;
    return { ...db, syncUrl: url.toString() };
  };

  it('says once that the source does not answer, serves the last state meanwhile, and catches up when it is back', async () => {
    const table = await freshTable();
    const api = tableApi(table);
    const upstream = new URL(db.url);
    const proxy = await startFaultProxy(`http://${upstream.host}`);
    const sync = startSync(through(proxy), table);
    try {
      await sync.readyNow;
      // Every connection is accepted and closed at once (counted, unlike a refused one): the log's
      // stream and the sync's queries are cut, and every attempt to connect again fails.
      await proxy.set({ fault: 'close' });
      await addProject(101, 'During the outage');
      await servedWithin(async () => sync.lines.some((line) => line.includes('the source does not answer')));
      // Through the outage the API answers from the last state.
      const during = await api.get('/api/acme/projects', { token: SECRET });
      expect(during.status).toBe(200);
      expect(during.body.meta.total).toBe(1);
      // Several attempts to connect again, each failed, and said once in all.
      const attempts = proxy.injected;
      await servedWithin(async () => proxy.injected >= attempts + 3, 15_000);
      expect(sync.lines.filter((line) => line.includes('the source does not answer'))).toHaveLength(1);
      expect(sync.lines.join('\n')).not.toContain(db.password);
      await proxy.pass();
      const ms = await servedWithin(
        async () => (await api.get('/api/acme/projects', { token: SECRET })).body.meta.total === 2,
      );
      expect(ms).toBeLessThan(10_000);
      expect(sync.lines.some((line) => line.includes('the source answers again'))).toBe(true);
      expect(sync.metrics.some((m) => m.SyncSourceErrors === 1)).toBe(true);
    } finally {
      await sync.stop();
      await proxy.close();
    }
  }, 60_000);

  it("waits for an import that holds the writers' lock, and applies what changed once it has finished", async () => {
    const table = await freshTable();
    const api = tableApi(table);
    const sync = startSync(db, table);
    try {
      await sync.readyNow;
      // An import writing team 1 holds that team's writers' lock.
      const importing = new TeamLocks(table, 'an-import', 'import');
      await importing.lock(1);
      await addProject(102, 'While an import runs');
      await servedWithin(async () =>
        sync.lines.some((line) => /^waiting for team 1, which an import \(.+, pid \d+\) is writing$/.test(line)),
      );
      expect(
        (await api.get('/api/acme/projects', { token: SECRET })).body.data.map((p: { id: number }) => p.id),
      ).not.toContain(102);
      await importing.releaseAll();
      await servedWithin(async () =>
        (await api.get('/api/acme/projects', { token: SECRET })).body.data.some((p: { id: number }) => p.id === 102),
      );
    } finally {
      await sync.stop();
    }
  }, 60_000);

  it('refuses a second sync on the same table, naming the first', async () => {
    const table = await freshTable();
    // Its lease renewed every second (not every 15 s): the second sees it renewed, so alive, that soon.
    const first = startSync(db, table, { lease: { leaseMs: 10_000, renewEveryMs: 1_000 } });
    try {
      await first.readyNow;
      const second = startSync(db, table);
      await expect(second.done).rejects.toThrow(
        /another sync is running \(.+, pid \d+, started .+\).*two syncs never run at once/,
      );
    } finally {
      await first.stop();
    }
  }, 90_000);

  it('ends at once, in one line without the password, when the source refuses the credentials', async () => {
    const wrong = new URL(db.syncUrl);
    wrong.password = 'not-the-password';
    const sync = startSync({ ...db, syncUrl: wrong.toString() }, await freshTable());
    const error = await sync.done.then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(SyncRefused);
    expect(error!.message).toMatch(/^the source refused the credentials \(.*\*\*\*@/);
    expect(error!.message).not.toContain('not-the-password');
    // Configuration, not weather: nothing said of a source that does not answer.
    expect(sync.lines).toEqual([]);
  });

  it('gives up a first pass (--once) on a source that does not answer, after the time it is given', async () => {
    const upstream = new URL(db.url);
    const proxy = await startFaultProxy(`http://${upstream.host}`);
    await proxy.set({ fault: 'refuse' });
    try {
      const sync = startSync(through(proxy), await freshTable(), { once: true, giveUpAfterMs: 1_500 });
      await expect(sync.done).rejects.toThrow(/the source did not answer for 2 s \(.*\): gave up/);
      expect(sync.lines.filter((line) => line.includes('does not answer'))).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  it('names every missing table and column before it says setup has not been run, and what the roles lack', async () => {
    const empty = await createSourceDatabase(engine, { schema: false });
    const weak = await createSourceDatabase(engine, { privileges: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'] });
    try {
      // Schema first: no word of setup while tables and columns are missing (nothing is set up there).
      await empty.query('CREATE TABLE teams (id bigint primary key, slug varchar(255))');
      const missing = startSync(empty, await freshTable());
      await expect(missing.done).rejects.toThrow(/ lacks teams\.name, teams\.user_id; table users; .*table costs$/);
      // The app's role, run as the sync: it has no REPLICATION (PostgreSQL), no REPLICATION SLAVE nor
      // REPLICATION CLIENT (MySQL), and the sync names each before it starts.
      const unprivileged = startSync({ ...weak, syncUrl: weak.url }, await freshTable());
      await expect(unprivileged.done).rejects.toThrow(
        engine === 'postgres'
          ? /is not prepared for the sync \(the role lacks REPLICATION; .*\): run npm run sync -- setup --source <url>$/
          : /is not prepared for the sync \(REPLICATION SLAVE, .*; REPLICATION CLIENT, .*\): run npm run sync -- setup --source <url>$/,
      );
      if (engine === 'postgres') {
        // Setup makes a publication and sets replica identities: the tables' owner's to do.
        await expect(setUp(weak)).rejects.toThrow(
          /cannot set up the sync \(.*\): it lacks CREATE on the database \(to create the publication\); ownership of (teams|clients)/,
        );
      } else {
        // Setup installs nothing on MySQL: any role that reads the server's settings may run it.
        expect((await setUp(weak))[0]).toMatch(/is ready for the sync: .*nothing was installed$/);
      }
    } finally {
      await Promise.all([empty.drop(), weak.drop()]);
    }
  }, 60_000);

  it('refuses a source not prepared, naming the setup command', async () => {
    if (engine === 'postgres') {
      // Setup not run: no publication.
      const unprepared = await createSourceDatabase(engine);
      try {
        const sync = startSync(unprepared, await freshTable());
        await expect(sync.done).rejects.toThrow(
          /is not prepared for the sync \(the publication team_resources_sync does not exist\): run npm run sync -- setup --source <url>$/,
        );
      } finally {
        await unprepared.drop();
      }
      return;
    }
    // MySQL's binlog needs no setup, but the server's settings: a binlog in STATEMENT format is no log of rows.
    const server = await startMariaDb({ binlogFormat: 'STATEMENT' });
    try {
      const unprepared = await createSourceDatabase(engine, { server });
      const sync = startSync(unprepared, await freshTable());
      await expect(sync.done).rejects.toThrow(
        /is not prepared for the sync \(binlog_format=ROW \(it is STATEMENT: .*\)\): run npm run sync -- setup --source <url>$/,
      );
      await unprepared.drop();
    } finally {
      await server.stop();
    }
  }, 60_000);
});
