import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { legacySetupStatements } from '../support/legacy-capture.ts';
import { postgresChangeSource } from '../../shared/sync/log/postgres.ts';
import {
  postgresPrepared,
  postgresRequirements,
  preparePostgres,
  removePostgres,
  SetupGaveUp,
} from '../../shared/sync/log/postgres-setup.ts';
import { parseSourceUrl } from '../../shared/sync/source/url.ts';
import { connectSource, type SourceConnection } from '../../shared/sync/source/connection.ts';
import { createSyncRole } from '../support/log-postgres.ts';
import { createSourceDatabase, type SourceDatabase, sourceServer } from '../support/source-databases.ts';
import { type RunningServer, startPostgres } from '../support/source-servers.ts';

/**
 * The PostgreSQL side of `sync setup` and `sync remove` for the log reader, against the suite's PostgreSQL:
 * what each role lacks, a publication and replica identities made and unmade (idempotent, recorded), the
 * earlier trigger-based capture removed, and a lock held by the app waited for briefly, said, and given up
 * on without leaving anything behind.
 */

const TABLES = ['teams', 'projects', 'team_user', 'costs', 'audit'];
const PUBLICATION = 'team_resources';
const FULL_LINE = (table: string, why = '') =>
  `${table}: REPLICA IDENTITY FULL${why}; the WAL now holds the old row of every UPDATE and DELETE of ${table} too`;
const NO_KEY = ' (it has no primary key: its UPDATEs and DELETEs would fail once published)';
const PUBLISHES = `the publication ${PUBLICATION} publishes ${TABLES.join(', ')}`;

describe.skipIf(sourceServer('postgres').state === 'missing')('PostgreSQL setup and remove for the log', () => {
  let db: SourceDatabase;
  let sync: Awaited<ReturnType<typeof createSyncRole>>;
  let app: SourceConnection;
  const waits: string[] = [];
  const prepare = (fullIdentity = ['team_user'], tables = TABLES) =>
    preparePostgres(app, { tables, fullIdentity, publication: PUBLICATION, onWait: (line) => waits.push(line) });
  const remove = () =>
    removePostgres(app, { tables: TABLES, publication: PUBLICATION, slot, onWait: (line) => waits.push(line) });
  const identities = async () =>
    Object.fromEntries(
      (
        await db.query<{ relname: string; relreplident: string }>(
          `SELECT relname, relreplident FROM pg_class WHERE relname = ANY($1) ORDER BY relname`,
          [TABLES],
        )
      ).map((row) => [row.relname, row.relreplident]),
    );
  let slot: string;

  beforeAll(async () => {
    db = await createSourceDatabase('postgres');
    slot = `${db.database}_slot`;
    // A table with no key, as apps have: published with its identity DEFAULT, its UPDATEs would fail.
    await db.query('CREATE TABLE audit (at timestamp(0), what text)');
    await db.query(`INSERT INTO audit VALUES ('2026-01-02 03:04:05', 'made')`);
    sync = await createSyncRole(db);
    app = await connectSource(parseSourceUrl(db.url));
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
    await sync?.drop();
  });

  it('names what each role lacks, one phrase each', async () => {
    const required = async (url: string, role: 'setup' | 'sync', tables = TABLES) => {
      const client = await connectSource(parseSourceUrl(url));
      try {
        return await postgresRequirements(client, { tables, role, slot });
      } finally {
        await client.close();
      }
    };
    expect(await required(db.url, 'setup')).toEqual([]);
    expect(await required(sync.url, 'sync')).toEqual([]);
    expect(await required(db.url, 'sync')).toEqual(['the role lacks REPLICATION']);
    expect(await required(sync.url, 'setup', ['teams', 'nope'])).toEqual([
      'CREATE on the database (to create the publication)',
      'ownership of teams',
      'the table nope',
    ]);
    await db.adminQuery(`REVOKE SELECT ON projects FROM "${sync.name}"`);
    expect(await required(sync.url, 'sync')).toEqual(['SELECT on projects']);
    await db.query(`GRANT SELECT ON projects TO "${sync.name}"`);
  });

  it('names wal_level and full slots on a server not set for logical decoding', async () => {
    let server: RunningServer | undefined;
    let other: SourceDatabase | undefined;
    try {
      server = await startPostgres({ walLevel: 'replica', settings: { max_replication_slots: '1' } });
      other = await createSourceDatabase('postgres', { server, replication: true });
      await other.adminQuery(`SELECT pg_create_physical_replication_slot('taken')`);
      const client = await connectSource(parseSourceUrl(other.url));
      expect(await postgresRequirements(client, { tables: ['teams'], role: 'sync' })).toEqual([
        'wal_level is replica, not logical (set wal_level=logical and restart; ' +
          'on RDS the parameter rds.logical_replication=1 and a reboot)',
        'max_replication_slots is full (1 of 1 slots in use)',
      ]);
      await client.close();
    } finally {
      await other?.adminQuery(`SELECT pg_drop_replication_slot('taken')`).catch(() => {});
      await other?.drop();
      await server?.stop();
    }
  });

  it('publishes exactly the tables, makes FULL what is asked or has no key, removes the old capture', async () => {
    for (const statement of legacySetupStatements('postgres')) await db.query(statement);
    const oldTriggers = async () =>
      (
        await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_trigger WHERE tgname LIKE 'team\\_resources%'`)
      )[0]!.n;
    expect(await oldTriggers()).toBeGreaterThan(0);
    const lines = await prepare();
    expect(lines.slice(0, 8)).toEqual([
      `created the publication ${PUBLICATION}`,
      FULL_LINE('team_user'),
      FULL_LINE('audit', NO_KEY),
      'published teams',
      'published projects',
      'published team_user',
      'published costs',
      'published audit',
    ]);
    expect(lines.slice(8, -3).every((line) => line.startsWith("removed the earlier capture's triggers on "))).toBe(
      true,
    );
    expect(lines.slice(-3)).toEqual([
      expect.stringMatching(/^removed the earlier capture's functions \(team_resources_capture_/),
      "removed the earlier capture's tables (team_resources_changes, team_resources_sync)",
      PUBLISHES,
    ]);
    expect(await oldTriggers()).toBe(0);
    expect(await db.query(`SELECT to_regclass('team_resources_changes') AS t`)).toEqual([{ t: null }]);
    expect(
      await postgresPrepared(app, { tables: TABLES, fullIdentity: ['team_user'], publication: PUBLICATION }),
    ).toEqual([]);
    expect(await identities()).toMatchObject({ audit: 'f', team_user: 'f', projects: 'd', teams: 'd' });
    // The app's own writes of the table with no key still work once it is published.
    await db.query(`UPDATE audit SET what = 'changed'`);
    await db.query('DELETE FROM audit');
  });

  it('is idempotent, and follows a changed mapping', async () => {
    expect(await prepare()).toEqual([
      'team_user is REPLICA IDENTITY FULL already',
      'audit is REPLICA IDENTITY FULL already',
      `nothing to do: ${PUBLISHES}`,
    ]);
    const fewer = TABLES.filter((table) => table !== 'costs');
    expect(await prepare([], fewer)).toEqual([
      'audit is REPLICA IDENTITY FULL already',
      'no longer published: costs',
      'team_user: REPLICA IDENTITY DEFAULT again (as before setup)',
      `the publication ${PUBLICATION} publishes ${fewer.join(', ')}`,
    ]);
    expect(await prepare()).toEqual([
      FULL_LINE('team_user'),
      'audit is REPLICA IDENTITY FULL already',
      'published costs',
      PUBLISHES,
    ]);
    expect(waits).toEqual([]);
  });

  it('removes the slot, the publication and the FULL it made, and leaves alone what it found', async () => {
    await db.query('ALTER TABLE teams REPLICA IDENTITY FULL'); // the app's own choice, not setup's
    expect(await prepare(['team_user', 'teams'])).toContain('teams is REPLICA IDENTITY FULL already (left as found)');
    const reader = postgresChangeSource({ url: sync.url, slot, publication: PUBLICATION });
    const stream = await reader.open(await reader.currentPosition());
    await expect(remove()).rejects.toThrow(`a sync is reading the replication slot ${slot} (pid `);
    await reader.close();
    await stream.close();
    // The app's role has no REPLICATION: the slot is left, with the SQL for the sync's role.
    const lines = await remove();
    expect(lines).toEqual([
      `the replication slot ${slot} is left (dropping it needs REPLICATION, which this role lacks), and the server ` +
        `keeps WAL for it: as the sync's role run SELECT pg_drop_replication_slot('${slot}');`,
      ...[...TABLES].sort().map((table) => `no longer published: ${table}`),
      'audit: REPLICA IDENTITY DEFAULT again (as before setup)',
      'team_user: REPLICA IDENTITY DEFAULT again (as before setup)',
      `dropped the publication ${PUBLICATION}`,
    ]);
    expect(await identities()).toMatchObject({ audit: 'd', team_user: 'd', teams: 'f' });
    await db.adminQuery(`ALTER ROLE "${db.user}" REPLICATION`);
    expect(await remove()).toEqual([`dropped the replication slot ${slot} (the server keeps no WAL for it any more)`]);
    expect(await remove()).toEqual([`nothing to remove: no publication ${PUBLICATION}, no slot ${slot}`]);
    await db.query('ALTER TABLE teams REPLICA IDENTITY DEFAULT');
  });

  it('waits briefly for a lock the app holds, says what holds it, and gives up leaving nothing behind', async () => {
    const holder = await db.session();
    const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'))[0]!.pid;
    const setupPid = (await app.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'))[0]!.pid;
    await holder.query('BEGIN');
    await holder.query('SELECT * FROM projects LIMIT 1');
    waits.length = 0;
    const started = Date.now();
    const error = await prepare(['team_user', 'projects']).catch((e: unknown) => e);
    const waited = Date.now() - started;
    expect(error).toBeInstanceOf(SetupGaveUp);
    const held = `ALTER TABLE "projects" REPLICA IDENTITY FULL waits for a lock on projects held by pid ${holderPid} (`;
    expect(waits).toEqual([expect.stringContaining(held) as string, expect.stringContaining(held) as string]);
    expect(waits[0]).toMatch(
      /, idle in transaction since \d\d:\d\d:\d\d: "SELECT \* FROM projects LIMIT 1"\); trying again \(2 of 3\)$/,
    );
    expect((error as Error).message).toMatch(/gave up after 3 tries of 2 s \(that step was not done; /);
    expect((error as SetupGaveUp).done).toEqual([`created the publication ${PUBLICATION}`]);
    expect(waited).toBeGreaterThanOrEqual(6_000);
    expect(waited).toBeLessThan(15_000);
    // Nothing held or waiting but the app's own transaction; the setup session idle, outside any transaction.
    const locks = await db.adminQuery<{ pid: number }>(
      `SELECT DISTINCT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE a.datname = current_database() AND (l.relation = 'projects'::regclass OR NOT l.granted)`,
    );
    expect(locks).toEqual([{ pid: holderPid }]);
    const [setupSession] = await db.adminQuery<{ state: string; wait_event_type: string | null }>(
      'SELECT state, wait_event_type FROM pg_stat_activity WHERE pid = $1',
      [setupPid],
    );
    expect(setupSession).toEqual({ state: 'idle', wait_event_type: 'Client' });
    expect(await identities()).toMatchObject({ projects: 'd' });
    await holder.query('COMMIT');
    await holder.close();
    expect(await prepare(['team_user', 'projects'])).toContain(FULL_LINE('projects'));
  });
});
