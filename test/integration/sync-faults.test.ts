import { afterAll, beforeAll, expect, it } from 'vitest';
import { defaultMapping } from '../../shared/sync/mapping.ts';
import { setUpSource } from '../../shared/sync/setup.ts';
import { parseSourceUrl } from '../../shared/sync/source/url.ts';
import { connectSource } from '../../shared/sync/source/connection.ts';
import { SyncRefused } from '../../shared/sync/sync.ts';
import { acquireWriterLock } from '../../shared/write/lease.ts';
import { freshTable } from '../support/dynamodb.ts';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
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

  /** The app role's URL through `proxy` instead of straight to the server. */
  const through = (proxy: FaultProxy) => {
    const url = new URL(db.url);
    url.host = `127.0.0.1:${proxy.port}`;
    return { ...db, url: url.toString() };
  };

  it('says once that the source does not answer, serves the last state meanwhile, and catches up when it is back', async () => {
    const table = await freshTable();
    const api = tableApi(table);
    const upstream = new URL(db.url);
    const proxy = await startFaultProxy(`http://${upstream.host}`);
    const sync = startSync(through(proxy), table);
    try {
      await servedWithin(async () => (await api.get('/api/acme/projects', { token: SECRET })).status === 200, 30_000);
      await proxy.set({ fault: 'refuse' });
      await addProject(101, 'During the outage');
      await servedWithin(async () => sync.lines.some((line) => line.includes('the source does not answer')));
      // Through the outage the API answers from the last state.
      const during = await api.get('/api/acme/projects', { token: SECRET });
      expect(during.status).toBe(200);
      expect(during.body.meta.total).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 3_000)); // several retries
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
      await servedWithin(async () => (await api.get('/api/acme/projects', { token: SECRET })).status === 200, 30_000);
      const importing = await acquireWriterLock(table.doc, table.tableName, 'import', {
        leaseMs: 5_000,
        renewEveryMs: 500,
      });
      await addProject(102, 'While an import runs');
      await servedWithin(async () => sync.lines.some((line) => line.includes('an import is running')));
      expect(
        (await api.get('/api/acme/projects', { token: SECRET })).body.data.map((p: { id: number }) => p.id),
      ).not.toContain(102);
      await importing.release();
      await servedWithin(async () =>
        (await api.get('/api/acme/projects', { token: SECRET })).body.data.some((p: { id: number }) => p.id === 102),
      );
    } finally {
      await sync.stop();
    }
  }, 60_000);

  it('refuses a second sync on the same table, naming the first', async () => {
    const table = await freshTable();
    const first = startSync(db, table);
    const api = tableApi(table);
    try {
      await servedWithin(async () => (await api.get('/api/acme/projects', { token: SECRET })).status === 200, 30_000);
      const second = startSync(db, table);
      await expect(second.done).rejects.toThrow(
        /another sync is running \(.+, pid \d+, started .+\).*two syncs never run at once/,
      );
    } finally {
      await first.stop();
    }
  }, 90_000);

  it('ends at once, in one line without the password, when the source refuses the credentials', async () => {
    const wrong = new URL(db.url);
    wrong.password = 'not-the-password';
    const sync = startSync({ ...db, url: wrong.toString() }, await freshTable());
    const error = await sync.done.then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(SyncRefused);
    expect(error!.message).toMatch(/^the source refused the credentials \(.*\*\*\*@/);
    expect(error!.message).not.toContain('not-the-password');
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

  it('names every missing table and column before it says setup has not been run, and names what setup cannot install', async () => {
    const empty = await createSourceDatabase(engine, { schema: false });
    const unprepared = await createSourceDatabase(engine);
    const weak = await createSourceDatabase(engine, { privileges: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'] });
    try {
      await empty.query('CREATE TABLE teams (id bigint primary key, name varchar(255))');
      const missing = startSync(empty, await freshTable());
      await expect(missing.done).rejects.toThrow(/lacks teams\.slug, teams\.user_id; table users; .*table costs$/);
      const notSetUp = startSync(unprepared, await freshTable());
      await expect(notSetUp.done).rejects.toThrow(
        /is not prepared for the sync: run npm run sync -- setup --source <url>/,
      );
      const connection = await connectSource(parseSourceUrl(weak.url));
      try {
        await expect(setUpSource(connection, defaultMapping(engine), 'weak')).rejects.toThrow(
          engine === 'postgres'
            ? /lacks CREATE on the schema .*; TRIGGER on teams; TRIGGER on users/
            : /lacks CREATE on the database; DROP on the database; TRIGGER on the database/,
        );
      } finally {
        await connection.close();
      }
    } finally {
      await Promise.all([empty.drop(), unprepared.drop(), weak.drop()]);
    }
  }, 60_000);
});
