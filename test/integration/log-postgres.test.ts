import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ChangeSource, type ChangeStream, LogPositionLost } from '../../shared/sync/log/change-source.ts';
import { lsnValue } from '../../shared/sync/log/lsn.ts';
import { postgresChangeSource, SlotInUse } from '../../shared/sync/log/postgres.ts';
import { preparePostgres } from '../../shared/sync/log/postgres-setup.ts';
import { parseSourceUrl } from '../../shared/sync/source/url.ts';
import { connectSource } from '../../shared/sync/source/connection.ts';
import { sourceFault } from '../../shared/sync/source/faults.ts';
import { createSyncRole, readLog, startTcpProxy } from '../support/log-postgres.ts';
import { createSourceDatabase, type SourceDatabase, sourceServer } from '../support/source-databases.ts';
import { startPostgres } from '../support/source-servers.ts';

/**
 * The PostgreSQL log reader against the suite's PostgreSQL (wal_level=logical): the app's role owns the
 * tables and writes; the sync reads as a role with only REPLICATION and SELECT, through a slot and the
 * publication setup made. No mocks: every change is committed by the app and read back from the WAL.
 */

const TABLES = ['teams', 'projects', 'team_user', 'costs'];
/**
 * The reader's intervals, shortened (a keepalive asked every 2 s, the publication read every 10 s, a busy
 * slot waited for 10 s): each case waits for what they bring in a fraction of that. The log's progress
 * while idle (every 5 s) and the silence limit are shortened only where a case waits for them: elsewhere
 * a case counts the parts it is handed.
 */
const INTERVALS = { pingMs: 200, watchMs: 500, slotBusyMs: 5_000 };
const T = '2026-01-02 03:04:05';

describe.skipIf(sourceServer('postgres').state === 'missing')('the PostgreSQL log (pgoutput)', () => {
  let db: SourceDatabase;
  let sync: Awaited<ReturnType<typeof createSyncRole>>;
  let source: ChangeSource;
  const opened: ChangeStream[] = [];
  /** A stream of the main slot, closed after the test whatever happens. */
  const open = async (position: string) => {
    const stream = await source.open(position);
    opened.push(stream);
    return { stream, log: readLog(stream) };
  };
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((stream) => stream.close()));
  });
  const slot = (name: string) => `${db.database}_${name}`;
  const sourceFor = (name: string, url = sync.url, shorter: { silenceMs?: number; idlePartMs?: number } = {}) =>
    postgresChangeSource({
      url,
      slot: slot(name),
      publication: 'team_resources',
      intervals: { ...INTERVALS, ...shorter },
    });
  /** Where the WAL ends: a stream opened there reads what the test commits next, and nothing of earlier tests. */
  const now = async () =>
    (await db.adminQuery<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn'))[0]!.lsn;
  const setup = async () => {
    const app = await connectSource(parseSourceUrl(db.url));
    try {
      return await preparePostgres(app, {
        tables: TABLES,
        fullIdentity: ['team_user'],
        publication: 'team_resources',
        onWait: () => {},
      });
    } finally {
      await app.close();
    }
  };

  beforeAll(async () => {
    db = await createSourceDatabase('postgres');
    await setup();
    sync = await createSyncRole(db);
    source = sourceFor('main');
    await db.query(
      `INSERT INTO teams (id, name, slug, personal_team, created_at) VALUES (1, 'Acme', 'acme', false, $1)`,
      [T],
    );
    await source.currentPosition(); // makes the slot
  });
  afterAll(async () => {
    await source?.close();
    await db?.drop();
    await sync?.drop();
  });

  it('delivers inserts, updates and deletes as text, with the old row where pgoutput sends it', async () => {
    const { stream, log } = await open(await source.currentPosition());
    await db.query(
      `INSERT INTO projects (id, team_id, name, slug, created_at) VALUES (9007199254740993, 1, 'A', 'a', $1)`,
      [T],
    );
    await db.query(`INSERT INTO team_user (id, team_id, user_id, role) VALUES (5, 1, 10, NULL)`);
    await db.query(`UPDATE projects SET name = 'B'`); // DEFAULT identity, key unchanged: no old row
    await db.query(`UPDATE projects SET id = 7`); // the key changed: the old key
    await db.query(`UPDATE team_user SET role = 'admin'`); // FULL: the whole old row
    await db.query(`DELETE FROM projects`);
    await db.query(`DELETE FROM team_user`);
    await log.until(() => log.transactions().length === 7);
    const project = { team_id: '1', client_id: null, slug: 'a', created_at: T, updated_at: null };
    const member = { id: '5', team_id: '1', user_id: '10', created_at: null, updated_at: null };
    expect(log.changes()).toEqual([
      { kind: 'insert', table: 'projects', row: { id: '9007199254740993', name: 'A', ...project } },
      { kind: 'insert', table: 'team_user', row: { ...member, role: null } },
      { kind: 'update', table: 'projects', row: { id: '9007199254740993', name: 'B', ...project } },
      { kind: 'update', table: 'projects', row: { id: '7', name: 'B', ...project }, old: { id: '9007199254740993' } },
      { kind: 'update', table: 'team_user', row: { ...member, role: 'admin' }, old: { ...member, role: null } },
      { kind: 'delete', table: 'projects', old: { id: '7' } },
      { kind: 'delete', table: 'team_user', old: { ...member, role: 'admin' } },
    ]);
    const positions = log.transactions().map((t) => lsnValue(t.position));
    expect(positions).toEqual([...positions].sort((a, b) => (a < b ? -1 : 1)));
    for (const { committedAt } of log.transactions()) expect(Math.abs(committedAt - Date.now())).toBeLessThan(60_000);
    await stream.close();
  });

  it('delivers each transaction whole, in commit order, whatever order they began in', async () => {
    const { stream, log } = await open(await now());
    const [first, second] = [await db.session(), await db.session()];
    await first.query('BEGIN');
    await first.query(`INSERT INTO projects (id, team_id, name, slug) VALUES (20, 1, 'began first', 'f')`);
    await second.query('BEGIN');
    await second.query(`INSERT INTO projects (id, team_id, name, slug) VALUES (21, 1, 'began second', 's')`);
    await second.query(`UPDATE teams SET name = 'Acme 2'`);
    await second.query('COMMIT');
    await first.query(`INSERT INTO costs (id, team_id, label, amount, currency) VALUES (1, 1, 'x', 1.5, 'EUR')`);
    await first.query('COMMIT');
    await Promise.all([first.close(), second.close()]);
    await log.until(() => log.transactions().length === 2);
    expect(
      log.transactions().map((t) => t.changes.map((c) => [c.kind, 'table' in c ? c.table : ''].join(' '))),
    ).toEqual([
      ['insert projects', 'update teams'],
      ['insert projects', 'insert costs'],
    ]);
    await stream.close();
  });

  it('hands a large transaction over in parts, only the last with the commit', async () => {
    const { log } = await open(await now());
    const insert = (from: number, rows: number) =>
      db.query(
        `INSERT INTO projects (id, team_id, name, slug) SELECT n, 1, 'p', 's' FROM generate_series($1::int, $2::int) n`,
        [from, from + rows - 1],
      );
    await insert(10_001, 2_500);
    await insert(20_001, 2_000); // its commit comes after its last change: a part of its own
    await insert(30_001, 1);
    await log.until(() => log.transactions().length === 3);
    expect(log.parts.map((part) => [part.changes.length, part.commit !== undefined])).toEqual([
      [1000, false],
      [1000, false],
      [500, true],
      [1000, false],
      [1000, false],
      [0, true],
      [1, true],
    ]);
    await db.query('DELETE FROM projects WHERE id > 10000');
  });

  it('says TRUNCATE as one change naming its tables', async () => {
    const { stream, log } = await open(await now());
    await db.query(`INSERT INTO team_user (team_id, user_id) VALUES (1, 11)`);
    await db.query('TRUNCATE team_user, costs');
    await log.until(() => log.transactions().length === 2);
    expect(log.transactions()[1]!.changes).toEqual([{ kind: 'truncate', tables: ['team_user', 'costs'] }]);
    await stream.close();
  });

  it('says a column added, renamed, retyped or dropped while the app writes, and misses no row', async () => {
    const { stream, log } = await open(await now());
    let writing = true;
    let written = 0;
    const writer = (async () => {
      while (writing)
        await db.query(`INSERT INTO projects (id, team_id, name, slug) VALUES ($1, 1, 'w', 'w')`, [1000 + ++written]);
    })();
    // Everything written so far read (the writer goes on meanwhile).
    const settle = () => {
      const target = written;
      return log.until(() => log.changes().filter((c) => c.kind === 'insert').length >= target);
    };
    for (const ddl of [
      'ALTER TABLE projects ADD COLUMN budget numeric(10, 2)',
      'ALTER TABLE projects RENAME COLUMN budget TO spend',
      'ALTER TABLE projects ALTER COLUMN spend TYPE numeric(12, 2)',
      'ALTER TABLE projects DROP COLUMN spend',
    ]) {
      await settle();
      await db.query(ddl);
    }
    await settle();
    writing = false;
    await writer;
    await settle();
    const inserts = log.changes().filter((c) => c.kind === 'insert');
    expect(inserts.map((c) => c.kind === 'insert' && Number(c.row.id))).toEqual(
      Array.from({ length: written }, (_, i) => 1001 + i),
    );
    expect(log.changes().filter((c) => c.kind === 'schema')).toEqual(
      Array.from({ length: 4 }, () => ({ kind: 'schema', table: 'projects' })),
    );
    expect(inserts.some((c) => c.kind === 'insert' && 'budget' in c.row)).toBe(true);
    await db.query('DELETE FROM projects WHERE id > 1000');
    await stream.close();
  });

  it('says a table dropped and made again (its rows go with no DELETE) as a schema change and a truncate', async () => {
    const { stream, log } = await open(await now());
    const saidTruncated = (n: number) => () =>
      log.changes().filter((c) => c.kind === 'truncate' && c.tables.includes('costs')).length >= n;
    await db.query(`INSERT INTO costs (id, team_id, label, amount, currency) VALUES (2, 1, 'y', 2, 'EUR')`);
    await db.query('DROP TABLE costs');
    await log.until(saidTruncated(1), 25_000);
    await db.query(
      `CREATE TABLE costs (id bigserial PRIMARY KEY, team_id bigint NOT NULL, label varchar(255) NOT NULL,
         amount decimal(20, 6) NOT NULL, currency varchar(3) NOT NULL,
         created_at timestamp(0), updated_at timestamp(0))`,
    );
    await setup(); // publishes the new table
    await db.query(`INSERT INTO costs (id, team_id, label, amount, currency) VALUES (3, 1, 'z', 3, 'EUR')`);
    const again = () => log.changes().findIndex((c) => c.kind === 'insert' && c.row.id === '3');
    await log.until(() => again() >= 0, 25_000);
    // Before it, however the publication's watch and the table's first relation message meet: said twice.
    const costs = log
      .changes()
      .slice(0, again() + 1)
      .filter((c) => ('table' in c ? c.table : c.tables[0]) === 'costs');
    expect(costs.map((c) => c.kind)).toEqual(['insert', 'schema', 'truncate', 'schema', 'truncate', 'insert']);
    await stream.close();
  });

  it('resumes after the acknowledged position, missing nothing, even a commit written right after it', async () => {
    let { stream, log } = await open(await now());
    const [first, second] = [await db.session(), await db.session()];
    await second.query('BEGIN');
    await second.query(`INSERT INTO projects (id, team_id, name, slug) VALUES (31, 1, 'second', 's')`);
    await first.query(`INSERT INTO projects (id, team_id, name, slug) VALUES (30, 1, 'first', 'f')`);
    await second.query('COMMIT'); // its commit record follows the first's at once
    await Promise.all([first.close(), second.close()]);
    await log.until(() => log.transactions().length === 2);
    const acknowledged = log.transactions()[0]!.position;
    await stream.acknowledge(acknowledged);
    await stream.close();
    await db.query(`INSERT INTO projects (id, team_id, name, slug) VALUES (32, 1, 'while closed', 'c')`);
    ({ stream, log } = await open(acknowledged));
    await log.until(() => log.transactions().length === 2);
    expect(log.changes().map((c) => c.kind === 'insert' && c.row.id)).toEqual(['31', '32']);
    await stream.close();
  });

  it('hands over the log’s progress while idle (server clock); retainedBytes follows acknowledgement', async () => {
    const source = sourceFor('idle', sync.url, { idlePartMs: 300 });
    await source.currentPosition(); // makes the slot
    // Closed here, before its source: a stream closed after its source would connect again to see the slot go.
    const stream = await source.open(await now());
    const log = readLog(stream);
    try {
      const before = await source.retainedBytes('');
      await db.query(
        `INSERT INTO projects (id, team_id, name, slug)
           SELECT 10000 + n, 1, repeat('x', 200), 's' || n FROM generate_series(1, 3000) n`,
      );
      await db.query('DELETE FROM projects WHERE id > 10000');
      await log.until(() => log.transactions().length === 2);
      const grown = await source.retainedBytes('');
      expect(grown).toBeGreaterThan(before + 500_000);
      // Written to a table the publication does not have: no transaction for the sync, only progress.
      const end = await now();
      await db.query(`INSERT INTO users (name, email, password) VALUES ('u', 'u@example.com', 'x')`);
      const idleAfter = (position: string) => () =>
        log.parts.find((p) => !p.changes.length && p.commit && lsnValue(p.commit.position) > lsnValue(position));
      await log.until(() => idleAfter(end)() !== undefined);
      expect(Math.abs(idleAfter(end)()!.commit!.committedAt - Date.now())).toBeLessThan(60_000);
      expect(await source.retainedBytes('')).toBeGreaterThanOrEqual(grown);
      // The slot's restart point moves once the server has logged its running transactions (a checkpoint does)
      // and the consumer acknowledged past that: each round, a checkpoint, then the next progress acknowledged.
      let acknowledged = end;
      for (let round = 0; round < 6 && (await source.retainedBytes('')) >= grown / 2; round++) {
        await db.adminQuery('CHECKPOINT');
        await log.until(() => idleAfter(acknowledged)() !== undefined);
        acknowledged = idleAfter(acknowledged)()!.commit!.position;
        await stream.acknowledge(acknowledged);
      }
      expect(await source.retainedBytes('')).toBeLessThan(grown / 2);
    } finally {
      await stream.close();
      await source.close();
    }
  });

  it('says a slot dropped while no stream was open as LogPositionLost, and makes a new one', async () => {
    const lost = sourceFor('dropped');
    const position = await lost.currentPosition();
    await (await lost.open(position)).close();
    await db.adminQuery('SELECT pg_drop_replication_slot($1)', [slot('dropped')]);
    const error = await lost.open(position).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LogPositionLost);
    expect((error as Error).message).toBe(`the replication slot ${slot('dropped')} no longer exists (it was dropped)`);
    await (await lost.open(await lost.currentPosition())).close();
    await lost.close();
  });

  it('says a slot invalidated (its WAL removed past max_slot_wal_keep_size) as LogPositionLost', async () => {
    const server = await startPostgres({ settings: { max_slot_wal_keep_size: '1MB' } });
    try {
      const admin = await connectSource(parseSourceUrl(server.adminUrl));
      await admin.query('CREATE TABLE t (id serial PRIMARY KEY)');
      await admin.query('CREATE PUBLICATION team_resources FOR TABLE t');
      const small = postgresChangeSource({ url: server.adminUrl, slot: 'small', publication: 'team_resources' });
      const position = await small.currentPosition();
      // WAL segments past the 1 MB the slot may keep, then a checkpoint, which removes them.
      for (let segment = 0; segment < 4; segment++) {
        await admin.query('INSERT INTO t DEFAULT VALUES');
        await admin.query('SELECT pg_switch_wal()');
      }
      await admin.query('CHECKPOINT');
      const error = await small.open(position).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LogPositionLost);
      expect((error as Error).message).toBe(
        'the replication slot small can no longer be read: the server removed WAL it still needed ' +
          '(wal_status lost: max_slot_wal_keep_size)',
      );
      await (await small.open(await small.currentPosition())).close(); // made again
      await Promise.all([small.close(), admin.close()]);
    } finally {
      await server.stop();
    }
  });

  it('waits for a slot another sync is letting go, and names one never let go', async () => {
    const [a, b, c] = [sourceFor('busy'), sourceFor('busy'), sourceFor('busy')];
    const position = await a.currentPosition();
    const first = await a.open(position);
    const second = b.open(position);
    setTimeout(() => void first.close(), 1_000);
    const taken = await second;
    const started = Date.now();
    const error = await c.open(position).catch((e: unknown) => e);
    expect(Date.now() - started).toBeGreaterThanOrEqual(INTERVALS.slotBusyMs - 1_000);
    expect(error).toBeInstanceOf(SlotInUse);
    expect((error as Error).message).toMatch(/^the replication slot \S+ is in use by another connection \(pid \d+\)/);
    await taken.close();
    await Promise.all([a.close(), b.close(), c.close()]);
  });

  it('never hangs: a connection cut, a server gone silent, a walsender ended: an error, as unreachable', async () => {
    const proxy = await startTcpProxy(db.url);
    const silenceMs = 2_000;
    const proxied = sourceFor('faults', proxy.url(sync.url), { silenceMs });
    try {
      const position = await proxied.currentPosition();
      let log = readLog(await proxied.open(position));
      proxy.cut();
      expect(sourceFault(await log.ended())).toBe('unreachable');
      log = readLog(await proxied.open(position));
      proxy.freeze();
      const started = Date.now();
      const silent = await log.ended(25_000);
      expect(Date.now() - started).toBeLessThan(silenceMs + 5_000);
      expect(sourceFault(silent)).toBe('unreachable');
      await proxy.close();
    } finally {
      await proxied.close();
    }
    const direct = sourceFor('faults');
    const log = readLog(await direct.open(await direct.currentPosition()));
    await db.adminQuery('SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1', [
      slot('faults'),
    ]);
    expect(sourceFault(await log.ended())).toBe('unreachable');
    await direct.close();
  });

  it('close() ends everything at once and leaves no connection of the sync behind', async () => {
    const closing = sourceFor('closing');
    const log = readLog(await closing.open(await closing.currentPosition()));
    await db.query(`INSERT INTO projects (id, team_id, name, slug) VALUES (40, 1, 'x', 'x')`);
    await log.until(() => log.transactions().length === 1);
    const started = Date.now();
    await closing.close();
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await log.ended()).toBeUndefined();
    await source.close();
    const sessions = async () =>
      (
        await db.adminQuery<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1', [
          sync.name,
        ])
      )[0]!.n;
    const deadline = Date.now() + 5_000;
    while ((await sessions()) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const left = await db.adminQuery(
      'SELECT application_name, backend_type, state, query FROM pg_stat_activity WHERE usename = $1',
      [sync.name],
    );
    expect(left, JSON.stringify(left)).toEqual([]);
  });
});
