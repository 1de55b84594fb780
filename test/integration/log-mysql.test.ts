import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ChangeSource, LoggedChange, LoggedTransaction } from '../../shared/sync/log/change-source.ts';
import { comparePositions, parsePosition } from '../../shared/sync/log/mysql-binlog.ts';
import { mysqlChangeSource } from '../../shared/sync/log/mysql.ts';
import { createLogDatabase, type LogDatabase, readStream, replicaServerId } from '../support/log-mysql.ts';
import { sourceServer } from '../support/source-databases.ts';

/**
 * The MySQL/MariaDB binlog reader (shared/sync/log/mysql.ts) against the suite's MariaDB (row binlog,
 * binlog_row_image FULL, CRC32 checksums, MariaDB's GTID events), read as the sync's user reads it:
 * SELECT on the database, REPLICATION SLAVE and REPLICATION CLIENT, nothing more. The app's changes
 * are made as the application's user. Faults, purges and the settings are in log-mysql-faults.test.ts.
 */

const TABLES = ['items', 'parents', 'children'];

/** A change in two words: "insert 101", "delete 101", "schema items". */
const said = (c: LoggedChange) =>
  c.kind === 'insert' || c.kind === 'update'
    ? `${c.kind} ${c.row.id}`
    : c.kind === 'delete'
      ? `delete ${c.old.id}`
      : c.kind === 'truncate'
        ? `truncate ${c.tables.join(',')}`
        : `schema ${c.table}`;

describe.skipIf(sourceServer('mysql').state === 'missing')('the MySQL/MariaDB binlog reader', () => {
  let log: LogDatabase;
  let source: ChangeSource;
  beforeAll(async () => {
    log = await createLogDatabase({ schema: false });
    await log.db.query(
      `CREATE TABLE items (id bigint unsigned NOT NULL PRIMARY KEY, name varchar(50) NULL,
         amount decimal(20, 6) NOT NULL DEFAULT 0, at timestamp NULL, note text NULL)`,
    );
    await log.db.query('CREATE TABLE others (id int NOT NULL PRIMARY KEY)');
    await log.db.query('CREATE TABLE parents (id bigint unsigned NOT NULL PRIMARY KEY)');
    await log.db.query(
      `CREATE TABLE children (id bigint unsigned NOT NULL PRIMARY KEY, parent_id bigint unsigned NULL,
         owner_id bigint unsigned NULL,
         FOREIGN KEY (parent_id) REFERENCES parents (id) ON DELETE CASCADE,
         FOREIGN KEY (owner_id) REFERENCES parents (id) ON DELETE SET NULL)`,
    );
  });
  afterAll(async () => log?.drop());
  afterEach(async () => source?.close());

  /**
   * A stream of the watched tables from the binlog's end now, read in the background; `idlePartMs`
   * shortens the 5 s after which an empty part tells where the log is.
   */
  async function follow(tables = TABLES, idlePartMs?: number) {
    source = mysqlChangeSource({ url: log.syncUrl, tables, serverId: replicaServerId(), intervals: { idlePartMs } });
    const from = await source.currentPosition();
    const stream = await source.open(from);
    return { from, stream, reader: readStream(stream) };
  }

  /** The first transaction holding a change that `match` accepts. */
  const holding = (match: (change: LoggedTransaction['changes'][number]) => boolean) => (seen: LoggedTransaction[]) =>
    seen.find((transaction) => transaction.changes.some(match));

  it('delivers inserts, updates and deletes with exact values, the whole row before, SQL NULL as null', async () => {
    const { reader } = await follow();
    const started = Date.now();
    await log.db.query(
      `INSERT INTO items (id, name, amount, at, note) VALUES
         (18446744073709551615, 'Zoë', 12345678901234.123456, '2026-01-02 03:04:05', NULL),
         (9007199254740993, 'b', -0.000001, NULL, 'x')`,
    );
    await log.db.query("UPDATE items SET name = 'Zoe' WHERE id = 18446744073709551615");
    await log.db.query('DELETE FROM items WHERE id = 9007199254740993');
    const deleted = await reader.until(
      holding((c) => c.kind === 'delete'),
      'the delete',
    );
    const [inserted, updated] = reader.seen;
    const first = { id: '18446744073709551615', name: 'Zoë', amount: '12345678901234.123456' };
    expect(inserted!.changes).toEqual([
      { kind: 'insert', table: 'items', row: { ...first, at: '2026-01-02 03:04:05', note: null } },
      {
        kind: 'insert',
        table: 'items',
        row: { id: '9007199254740993', name: 'b', amount: '-0.000001', at: null, note: 'x' },
      },
    ]);
    expect(updated!.changes).toEqual([
      {
        kind: 'update',
        table: 'items',
        row: { ...first, name: 'Zoe', at: '2026-01-02 03:04:05', note: null },
        old: { ...first, at: '2026-01-02 03:04:05', note: null },
      },
    ]);
    expect(deleted.changes).toEqual([
      {
        kind: 'delete',
        table: 'items',
        old: { id: '9007199254740993', name: 'b', amount: '-0.000001', at: null, note: 'x' },
      },
    ]);
    for (const transaction of [inserted!, updated!, deleted]) {
      // The commit's time by the server's clock, in whole seconds (the binlog's precision).
      expect(transaction.commit?.committedAt).toBeGreaterThanOrEqual(Math.floor(started / 1000) * 1000);
      expect(transaction.commit?.committedAt).toBeLessThanOrEqual(Date.now());
      expect(transaction.commit?.position).toMatch(/^binlog\.\d+:\d+$/);
    }
    expect(
      comparePositions(parsePosition(inserted!.commit!.position), parsePosition(deleted.commit!.position)),
    ).toBeLessThan(0);
  });

  it('delivers a transaction of several statements whole once committed, transactions in commit order', async () => {
    const { reader } = await follow();
    const first = await log.db.session();
    const second = await log.db.session();
    try {
      await first.query('BEGIN');
      await first.query("INSERT INTO items (id, name) VALUES (101, 'began first')");
      await second.query('BEGIN');
      await second.query("INSERT INTO items (id, name) VALUES (102, 'began second')");
      await second.query('INSERT INTO others (id) VALUES (102)');
      await second.query("UPDATE items SET name = 'committed first' WHERE id = 102");
      await second.query('COMMIT');
      await first.query("UPDATE items SET name = 'committed second' WHERE id = 101");
      await first.query('DELETE FROM items WHERE id = 101');
      await first.query('COMMIT');
    } finally {
      await first.close();
      await second.close();
    }
    await reader.until(
      holding((c) => c.kind === 'delete' && c.old.id === '101'),
      'the later commit',
    );
    const [earlier, later] = reader.seen.filter((t) => t.changes.length > 0);
    expect(earlier!.changes.map(said)).toEqual(['insert 102', 'update 102']);
    expect(later!.changes.map(said)).toEqual(['insert 101', 'update 101', 'delete 101']);
    expect(
      comparePositions(parsePosition(earlier!.commit!.position), parsePosition(later!.commit!.position)),
    ).toBeLessThan(0);
  });

  it('skips the rows of other tables and databases, yet hands over an empty part that moves the position', async () => {
    const { reader, from } = await follow(TABLES, 300);
    await log.db.query('INSERT INTO others (id) VALUES (1)');
    const elsewhere = `${log.db.database}_elsewhere`;
    await log.db.adminQuery(`CREATE DATABASE ${elsewhere}`);
    await log.db.adminQuery(`CREATE TABLE ${elsewhere}.items (id int)`);
    await log.db.adminQuery(`INSERT INTO ${elsewhere}.items VALUES (1)`);
    await log.db.adminQuery(`DROP DATABASE ${elsewhere}`);
    const end = parsePosition(await source.currentPosition());
    const moved = await reader.until(
      (seen) => seen.find((t) => t.commit && comparePositions(parsePosition(t.commit.position), end) >= 0),
      'a part at the binlog end',
    );
    expect(reader.seen.flatMap((t) => t.changes)).toEqual([]);
    expect(moved.changes).toEqual([]);
    expect(comparePositions(parsePosition(moved.commit!.position), parsePosition(from))).toBeGreaterThan(0);
  });

  it('reads TRUNCATE of a watched table as truncate, DDL of one as schema, with the new names after it', async () => {
    const { reader } = await follow();
    const rest = { amount: '0.000000', at: null, note: null };
    // Each statement, then what it must bring, once the one before has come: rows read long after a
    // later DDL could not be named (log-mysql-faults.test.ts). A watched table dropped, or renamed away
    // or onto, lost or gained its rows with no row in the log: read again as a TRUNCATE is.
    const steps: [string, LoggedChange[]][] = [
      ['CREATE TABLE scratch (id int)', []],
      ['TRUNCATE TABLE others', []],
      ['TRUNCATE TABLE items', [{ kind: 'truncate', tables: ['items'] }]],
      ['ALTER TABLE items ADD COLUMN extra varchar(10) NULL AFTER name', [{ kind: 'schema', table: 'items' }]],
      [
        "INSERT INTO items (id, name, extra) VALUES (201, 'added', 'x')",
        [{ kind: 'insert', table: 'items', row: { id: '201', name: 'added', extra: 'x', ...rest } }],
      ],
      ['ALTER TABLE items RENAME COLUMN extra TO renamed', [{ kind: 'schema', table: 'items' }]],
      [
        "INSERT INTO items (id, name, renamed) VALUES (202, 'renamed', 'y')",
        [{ kind: 'insert', table: 'items', row: { id: '202', name: 'renamed', renamed: 'y', ...rest } }],
      ],
      ['ALTER TABLE items DROP COLUMN renamed', [{ kind: 'schema', table: 'items' }]],
      [
        "INSERT INTO items (id, name) VALUES (203, 'dropped')",
        [{ kind: 'insert', table: 'items', row: { id: '203', name: 'dropped', ...rest } }],
      ],
      [
        'RENAME TABLE items TO items_before, scratch TO items',
        [
          { kind: 'truncate', tables: ['items'] },
          { kind: 'schema', table: 'items' },
        ],
      ],
      ['INSERT INTO items (id) VALUES (204)', [{ kind: 'insert', table: 'items', row: { id: '204' } }]],
      [
        'DROP TABLE items',
        [
          { kind: 'truncate', tables: ['items'] },
          { kind: 'schema', table: 'items' },
        ],
      ],
      [
        'RENAME TABLE items_before TO items',
        [
          { kind: 'truncate', tables: ['items'] },
          { kind: 'schema', table: 'items' },
        ],
      ],
      ['CREATE INDEX items_name ON items (name)', [{ kind: 'schema', table: 'items' }]],
    ];
    for (const [sql, expected] of steps) {
      const before = reader.seen.filter((t) => t.changes.length > 0).length;
      await log.db.query(sql);
      if (expected.length === 0) continue;
      const part = await reader.until((seen) => seen.filter((t) => t.changes.length > 0)[before], sql);
      expect(part.changes, sql).toEqual(expected);
    }
    expect(reader.seen.filter((t) => t.changes.length > 0)).toHaveLength(12);
    // Each statement stands alone: its own commit, after the one before.
    const positions = reader.seen.filter((t) => t.changes.length > 0).map((t) => parsePosition(t.commit!.position));
    for (let i = 1; i < positions.length; i++) {
      expect(comparePositions(positions[i - 1]!, positions[i]!)).toBeLessThan(0);
    }
  });

  it('hands over a huge transaction in parts, only the last with its commit', async () => {
    const { reader } = await follow();
    // MariaDB's sequence engine: 2,500 rows in one statement.
    await log.db.query("INSERT INTO items (id, name) SELECT 100000 + seq, 'bulk' FROM seq_1_to_2500");
    await reader.until(
      holding((c) => c.kind === 'insert' && c.row.id === '102500'),
      'the last row',
    );
    // Parts of one transaction: nothing of another comes between them (an empty part only between two).
    const parts = reader.seen.filter((part) => part.changes.length > 0);
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.slice(0, -1).every((part) => part.commit === undefined)).toBe(true);
    expect(parts.at(-1)!.commit).toBeDefined();
    const ids = parts.flatMap((part) => part.changes.map(said));
    expect(ids).toEqual(Array.from({ length: 2_500 }, (_, i) => `insert ${100_001 + i}`));
    await log.db.query('DELETE FROM items WHERE id > 100000');
  });

  it('reopens from an acknowledged position: what came after it, nothing before, nothing lost', async () => {
    const { stream, reader } = await follow();
    await log.db.query("INSERT INTO items (id, name) VALUES (301, 'before')");
    const before = await reader.until(
      holding((c) => c.kind === 'insert' && c.row.id === '301'),
      'the first insert',
    );
    await stream.acknowledge(before.commit!.position);
    await stream.close();
    await log.db.query("INSERT INTO items (id, name) VALUES (302, 'while closed')");
    await log.db.query("UPDATE items SET name = 'while closed, too' WHERE id = 301");
    const again = readStream(await source.open(before.commit!.position));
    await log.db.query("INSERT INTO items (id, name) VALUES (303, 'after')");
    await again.until(
      holding((c) => c.kind === 'insert' && c.row.id === '303'),
      'the insert after reopening',
    );
    expect(again.seen.flatMap((t) => t.changes.map(said))).toEqual(['insert 302', 'update 301', 'insert 303']);
  });

  it('sees only the parent row of a foreign-key cascade: MariaDB does not log what the cascade changes', async () => {
    const { reader } = await follow();
    await log.db.query('INSERT INTO parents (id) VALUES (1), (2)');
    await log.db.query('INSERT INTO children (id, parent_id, owner_id) VALUES (10, 1, NULL), (11, NULL, 2)');
    await log.db.query('DELETE FROM parents WHERE id = 1');
    await log.db.query('DELETE FROM parents WHERE id = 2');
    await reader.until(
      holding((c) => c.kind === 'delete' && c.old.id === '2'),
      'the second delete',
    );
    // ON DELETE CASCADE removed child 10, ON DELETE SET NULL emptied child 11's owner...
    expect(await log.db.query('SELECT id, owner_id FROM children')).toEqual([{ id: '11', owner_id: null }]);
    // ...and the binlog has neither: only the parents' rows.
    const changes = reader.seen.flatMap((t) => t.changes);
    expect(changes.filter((c) => c.kind !== 'insert')).toEqual([
      { kind: 'delete', table: 'parents', old: { id: '1' } },
      { kind: 'delete', table: 'parents', old: { id: '2' } },
    ]);
  });

  it('ends a stream at close() at once, and leaves no connection of the sync user behind', async () => {
    const { stream, reader } = await follow();
    await log.db.query("INSERT INTO items (id, name) VALUES (401, 'seen')");
    await reader.until(
      holding((c) => c.kind === 'insert' && c.row.id === '401'),
      'the insert',
    );
    const started = performance.now();
    await stream.close();
    await source.close();
    expect(performance.now() - started).toBeLessThan(3_000);
    await expect(stream[Symbol.asyncIterator]().next()).resolves.toEqual({ value: undefined, done: true });
    const sessions = async () =>
      log.db.adminQuery('SELECT ID, COMMAND FROM information_schema.PROCESSLIST WHERE USER = $1', [log.syncUser]);
    const deadline = performance.now() + 5_000;
    while ((await sessions()).length > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await sessions()).toEqual([]);
  });

  it('reads the binlog with SELECT, REPLICATION SLAVE and REPLICATION CLIENT alone', async () => {
    const grants = await log.db.adminQuery(`SHOW GRANTS FOR '${log.syncUser}'@'%'`);
    const privileges = grants.map((row) => String(Object.values(row)[0]).replace(/ IDENTIFIED BY .*/, ''));
    expect(privileges).toEqual([
      `GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO \`${log.syncUser}\`@\`%\``,
      `GRANT SELECT ON \`${log.db.database}\`.* TO \`${log.syncUser}\`@\`%\``,
    ]);
    // Every test above read as this user; the reader also finds the position and the retained bytes.
    source = mysqlChangeSource({ url: log.syncUrl, tables: TABLES, serverId: replicaServerId() });
    const position = await source.currentPosition();
    await expect(source.retainedBytes(position)).resolves.toBeGreaterThanOrEqual(0);
  });
});
