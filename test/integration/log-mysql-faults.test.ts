import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ChangeSource, type LogIntervals, LogPositionLost } from '../../shared/sync/log/change-source.ts';
import { comparePositions, parsePosition } from '../../shared/sync/log/mysql-binlog.ts';
import { BinlogStream } from '../../shared/sync/log/mysql-stream.ts';
import { mysqlChangeSource } from '../../shared/sync/log/mysql.ts';
import { SourceSilent } from '../../shared/sync/source/connection.ts';
import { sourceFault } from '../../shared/sync/source/faults.ts';
import {
  createLogDatabase,
  type LogDatabase,
  readStream,
  replicaServerId,
  startSilenceableProxy,
} from '../support/log-mysql.ts';
import { sourceServer } from '../support/source-databases.ts';
import { type RunningServer, startMariaDb } from '../support/source-servers.ts';

/**
 * The binlog reader (shared/sync/log/mysql.ts) when the log cannot be read on: a purged position, a
 * connection killed or gone silent, rows read back across a DDL of their table; and how much binlog
 * a position holds back. On a MariaDB of this file's own (its binlog is flushed and purged here), read
 * as the sync's user: SELECT, REPLICATION SLAVE and REPLICATION CLIENT.
 */

describe.skipIf(sourceServer('mysql').state === 'missing')('the MySQL/MariaDB binlog reader, faults', () => {
  let server: RunningServer;
  let log: LogDatabase;
  let source: ChangeSource;
  const admin = (sql: string, params?: unknown[]) => log.db.adminQuery(sql, params);
  beforeAll(async () => {
    server = await startMariaDb();
    log = await createLogDatabase({ schema: false, server: { engine: 'mysql', adminUrl: server.adminUrl } });
    await log.db.query('CREATE TABLE items (id bigint unsigned NOT NULL PRIMARY KEY, name varchar(50), note text)');
  });
  afterAll(async () => {
    await log?.drop();
    await server?.stop();
  });
  afterEach(async () => source?.close());

  /** The reader of `items`; `intervals` shorter than its own (an empty part while idle after 5 s, silence 10 s). */
  const open = (url = log.syncUrl, intervals?: LogIntervals) =>
    (source = mysqlChangeSource({ url, tables: ['items'], serverId: replicaServerId(), intervals }));
  /** The binlog's files and sizes, as the server's administrator sees them. */
  const binaryLogs = async () =>
    (await admin('SHOW BINARY LOGS')).map((row) => ({ name: String(row.Log_name), size: Number(row.File_size) }));

  it('counts the bytes of binlog after a position, across files, and none at the end', async () => {
    open();
    const from = await source.currentPosition();
    expect(await source.retainedBytes(from)).toBe(0);
    await log.db.query("INSERT INTO items (id, note) VALUES (1, REPEAT('x', 10000))");
    const grown = await source.retainedBytes(from);
    expect(grown).toBeGreaterThan(10_000);
    await admin('FLUSH BINARY LOGS');
    await log.db.query("INSERT INTO items (id, note) VALUES (2, REPEAT('y', 5000))");
    const logs = await binaryLogs();
    const { file, offset } = parsePosition(from);
    const at = logs.findIndex((l) => l.name === file);
    const expected = logs[at]!.size - offset + logs.slice(at + 1).reduce((sum, l) => sum + l.size, 0);
    expect(await source.retainedBytes(from)).toBe(expected);
    expect(expected).toBeGreaterThan(grown + 5_000);
    expect(await source.retainedBytes(await source.currentPosition())).toBe(0);
  });

  it('hands over an empty part at the binlog end while nothing happens, so that the position is known', async () => {
    open(log.syncUrl, { idlePartMs: 300 });
    const from = await source.currentPosition();
    const reader = readStream(await source.open(from));
    const idle = await reader.until((seen) => seen[0], 'a part while idle');
    expect(idle.changes).toEqual([]);
    // Where the binlog ends: at `from`, or just after what the server itself logs meanwhile (MariaDB's
    // binlog checkpoint, once InnoDB has flushed).
    const end = parsePosition(await source.currentPosition());
    const at = parsePosition(idle.commit!.position);
    expect(comparePositions(at, parsePosition(from))).toBeGreaterThanOrEqual(0);
    expect(comparePositions(at, end)).toBeLessThanOrEqual(0);
    expect(Math.abs(idle.commit!.committedAt - Date.now())).toBeLessThan(2_000);
  });

  it('delivers a transaction of 25,000 rows whole, in parts, reading on at the pace of the reader', async () => {
    open();
    const reader = readStream(await source.open(await source.currentPosition()));
    await log.db.query("INSERT INTO items (id, name) SELECT 1000000 + seq, 'bulk' FROM seq_1_to_25000");
    const last = await reader.until((seen) => seen.find((t) => t.commit && t.changes.length > 0), 'the commit');
    const parts = reader.seen.filter((t) => t.changes.length > 0);
    expect(parts.at(-1)).toBe(last);
    expect(parts.slice(0, -1).every((part) => part.commit === undefined)).toBe(true);
    const ids = parts.flatMap((part) => part.changes.map((c) => (c.kind === 'insert' ? Number(c.row.id) : 0)));
    expect(ids).toEqual(Array.from({ length: 25_000 }, (_, i) => 1_000_001 + i));
    await log.db.query('DELETE FROM items WHERE id > 1000000');
  });

  it('says in one line that a purged position is lost, at open and when the server refuses the dump', async () => {
    open();
    const purged = await source.currentPosition();
    await log.db.query("INSERT INTO items (id, name) VALUES (10, 'soon purged')");
    await admin('FLUSH BINARY LOGS');
    const { file } = parsePosition(await source.currentPosition());
    // MariaDB keeps a file until InnoDB has made its commits durable (the suite's server flushes once
    // a second), so the purge is asked again until it has happened.
    const deadline = performance.now() + 10_000;
    do {
      await admin(`PURGE BINARY LOGS TO '${file}'`);
      if ((await binaryLogs()).length === 1) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    } while (performance.now() < deadline);
    expect((await binaryLogs()).map((l) => l.name)).toEqual([file]);
    const error = await source.open(purged).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LogPositionLost);
    expect((error as Error).message).toContain(purged);
    expect((error as Error).message).not.toContain('\n');
    // The same position asked of the server itself (the check before the dump passed, say, just
    // before the purge): it answers error 1236, which is read as lost too.
    const stream = new BinlogStream({
      url: log.syncUrl,
      database: log.db.database,
      tables: ['items'],
      serverId: replicaServerId(),
      from: parsePosition(purged),
      serverClock: Date.now(),
      onClose: () => {},
    });
    const refused = await stream.started.catch((e: unknown) => e);
    await stream.close();
    expect(refused).toBeInstanceOf(LogPositionLost);
    expect((refused as Error).message).toMatch(/^the source's binlog no longer holds .+: .*first log file/);
    expect((refused as Error).message).not.toContain('\n');
  });

  it('fails the iteration as unreachable when the connection is killed', async () => {
    open();
    const stream = await source.open(await source.currentPosition());
    const reader = readStream(stream);
    await log.db.query("INSERT INTO items (id, name) VALUES (20, 'seen')");
    await reader.until((seen) => seen.find((t) => t.changes.length > 0), 'the insert');
    const dumps = await admin(
      "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = $1 AND COMMAND LIKE 'Binlog Dump%'",
      [log.syncUser],
    );
    expect(dumps).toHaveLength(1);
    await admin(`KILL ${Number(dumps[0]!.ID)}`);
    const error = await reader.failure();
    expect(sourceFault(error), String(error)).toBe('unreachable');
  });

  it('fails the iteration as unreachable when the source has been silent for its silence limit', async () => {
    const proxy = await startSilenceableProxy(log.syncUrl);
    // 10 s unless told, shortened here: heartbeats still come every second.
    const silenceMs = 3_000;
    try {
      open(proxy.url(log.syncUrl), { silenceMs });
      const reader = readStream(await source.open(await source.currentPosition()));
      proxy.silence();
      const started = performance.now();
      const error = await reader.failure(20_000);
      expect(error).toBeInstanceOf(SourceSilent);
      expect(sourceFault(error)).toBe('unreachable');
      // Heartbeats come every second: only a silence of the whole limit is taken for a lost source.
      expect(performance.now() - started).toBeGreaterThan(silenceMs - 1_000);
    } finally {
      // Closed first: a connection through a silent proxy would wait out its own limit to close.
      await proxy.close();
    }
  });

  it.each([
    ['a column renamed (as many columns)', 'ALTER TABLE items RENAME COLUMN name TO title'],
    ['a column dropped', 'ALTER TABLE items DROP COLUMN note'],
    ['a column added in the middle', 'ALTER TABLE items ADD COLUMN extra int AFTER id'],
  ])("never hands over rows read back across %s (named by today's columns): LogPositionLost", async (_, ddl) => {
    await log.db.query('DROP TABLE IF EXISTS items');
    await log.db.query('CREATE TABLE items (id bigint unsigned NOT NULL PRIMARY KEY, name varchar(50), note text)');
    open();
    const from = await source.currentPosition();
    await log.db.query("INSERT INTO items (id, name, note) VALUES (30, 'before', 'n')");
    await log.db.query(ddl);
    await log.db.query('INSERT INTO items (id) VALUES (31)');
    // A sync that was stopped while this ran, and reads it back now.
    const reader = readStream(await source.open(from));
    const error = await reader.failure();
    expect(error).toBeInstanceOf(LogPositionLost);
    expect((error as Error).message).not.toContain('\n');
    expect(reader.seen.flatMap((t) => t.changes)).toEqual([]);
  });

  it('reads back across a DDL with binlog_row_metadata=FULL: the binlog names the columns', async () => {
    await admin('SET GLOBAL binlog_row_metadata = FULL');
    try {
      await log.db.query('DROP TABLE IF EXISTS items');
      await log.db.query('CREATE TABLE items (id bigint unsigned NOT NULL PRIMARY KEY, name varchar(50))');
      open();
      const from = await source.currentPosition();
      await log.db.query("INSERT INTO items (id, name) VALUES (40, 'before')");
      await log.db.query('ALTER TABLE items RENAME COLUMN name TO title');
      await log.db.query("INSERT INTO items (id, title) VALUES (41, 'after')");
      const reader = readStream(await source.open(from));
      await reader.until((seen) => (seen.filter((t) => t.changes.length > 0).length >= 3 ? true : undefined), 'all');
      expect(reader.seen.filter((t) => t.changes.length > 0).map((t) => t.changes)).toEqual([
        [{ kind: 'insert', table: 'items', row: { id: '40', name: 'before' } }],
        [{ kind: 'schema', table: 'items' }],
        [{ kind: 'insert', table: 'items', row: { id: '41', title: 'after' } }],
      ]);
    } finally {
      await admin('SET GLOBAL binlog_row_metadata = NO_LOG');
    }
  });
});
