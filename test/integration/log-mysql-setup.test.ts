import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mysqlRequirements, removeMysqlLegacy } from '../../shared/sync/log/mysql-setup.ts';
import { parseSourceUrl } from '../../shared/sync/source/url.ts';
import { connectSource, type SourceConnection } from '../../shared/sync/source/connection.ts';
import { sourceFault } from '../../shared/sync/source/faults.ts';
import { createLogDatabase, type LogDatabase } from '../support/log-mysql.ts';
import { sourceServer } from '../support/source-databases.ts';
import { startMariaDb } from '../support/source-servers.ts';

/**
 * What reading the binlog needs of a MySQL/MariaDB source (mysqlRequirements), named thing by thing,
 * and the removal of what the trigger-based sync installed (removeMysqlLegacy), which never holds the
 * app up for more than a couple of seconds.
 */

const TABLES = ['items', 'others'];

async function withConnection<T>(url: string, work: (connection: SourceConnection) => Promise<T>): Promise<T> {
  const connection = await connectSource(parseSourceUrl(url));
  try {
    return await work(connection);
  } finally {
    await connection.close();
  }
}

describe.skipIf(sourceServer('mysql').state === 'missing')('what the MySQL/MariaDB binlog reader needs', () => {
  let log: LogDatabase;
  beforeAll(async () => {
    log = await createLogDatabase({ schema: false });
    await log.db.query('CREATE TABLE items (id bigint unsigned NOT NULL PRIMARY KEY, name varchar(50))');
    await log.db.query('CREATE TABLE others (id bigint unsigned NOT NULL PRIMARY KEY)');
  });
  afterAll(async () => log?.drop());

  it('finds nothing missing for a user with SELECT, REPLICATION SLAVE and REPLICATION CLIENT', async () => {
    // A table that is not there is for the schema check to name, not this one.
    const tables = [...TABLES, 'absent'];
    expect(await withConnection(log.syncUrl, (c) => mysqlRequirements(c, { tables }))).toEqual([]);
  });

  it("names REPLICATION SLAVE and REPLICATION CLIENT for the app's user, who has the database only", async () => {
    const missing = await withConnection(log.db.url, (c) => mysqlRequirements(c, { tables: TABLES }));
    expect(missing).toHaveLength(2);
    expect(missing[0]).toMatch(/^REPLICATION SLAVE, to read the binlog \(GRANT REPLICATION SLAVE ON \*\.\* TO …\)$/);
    expect(missing[1]).toMatch(/^REPLICATION CLIENT, .*\(GRANT REPLICATION CLIENT ON \*\.\* TO …\)$/);
  });

  it('names the tables a user may not read', async () => {
    const user = `${log.db.database}_items`;
    await log.db.adminQuery(`CREATE USER '${user}'@'%' IDENTIFIED BY 'secret-of-items'`);
    try {
      await log.db.adminQuery(`GRANT SELECT ON \`${log.db.database}\`.items TO '${user}'@'%'`);
      await log.db.adminQuery(`GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '${user}'@'%'`);
      const url = new URL(log.db.url);
      url.username = user;
      url.password = 'secret-of-items';
      const missing = await withConnection(url.href, (c) => mysqlRequirements(c, { tables: TABLES }));
      expect(missing).toEqual(['SELECT on others (GRANT SELECT ON <database>.* TO …)']);
    } finally {
      await log.db.adminQuery(`DROP USER '${user}'@'%'`);
    }
  });

  it('names binary logging, its format and its row image, each with the setting and its RDS equivalent', async () => {
    const server = await startMariaDb({ binlog: false });
    let bare: LogDatabase | undefined;
    try {
      bare = await createLogDatabase({ schema: false, server: { engine: 'mysql', adminUrl: server.adminUrl } });
      await bare.db.adminQuery("SET GLOBAL binlog_format = 'MIXED'");
      await bare.db.adminQuery("SET GLOBAL binlog_row_image = 'MINIMAL'");
      const missing = await withConnection(bare.syncUrl, (c) => mysqlRequirements(c, { tables: [] }));
      expect(missing).toHaveLength(3);
      expect(missing[0]).toMatch(/^binary logging \(start the server with log_bin .*automated backups/);
      expect(missing[1]).toMatch(/^binlog_format=ROW \(it is MIXED: /);
      expect(missing[2]).toMatch(/^binlog_row_image=FULL \(it is MINIMAL: .*parameter group/);
      for (const line of missing.slice(0, 2)) {
        expect(line).toContain('binlog_format=ROW in the DB (cluster) parameter group');
        expect(line).toContain("CALL mysql.rds_set_configuration('binlog retention hours', 24)");
      }
      for (const line of missing) expect(line).not.toContain('\n');
    } finally {
      await bare?.drop();
      await server.stop();
    }
  });
});

describe.skipIf(sourceServer('mysql').state === 'missing')('removing what the trigger-based sync installed', () => {
  let log: LogDatabase;
  beforeAll(async () => {
    log = await createLogDatabase({ schema: false });
    await log.db.query('CREATE TABLE items (id bigint unsigned NOT NULL PRIMARY KEY, name varchar(50))');
    await log.db.query('CREATE TABLE others (id bigint unsigned NOT NULL PRIMARY KEY)');
  });
  afterAll(async () => log?.drop());

  /** What setup installed: the change table, the setup record, and a trigger per event on each table. */
  async function installLegacy() {
    await log.db.query(
      'CREATE TABLE team_resources_changes (id bigint AUTO_INCREMENT PRIMARY KEY, part varchar(16), ref bigint)',
    );
    await log.db.query('CREATE TABLE team_resources_sync (name varchar(64) PRIMARY KEY, value text)');
    for (const table of TABLES) {
      for (const [event, row] of [
        ['insert', 'NEW'],
        ['update', 'NEW'],
        ['delete', 'OLD'],
      ] as const) {
        await log.db.query(
          `CREATE TRIGGER team_resources_${table}_${event} AFTER ${event.toUpperCase()} ON ${table} FOR EACH ROW ` +
            `INSERT INTO team_resources_changes (part, ref) VALUES ('${table}', ${row}.id)`,
        );
      }
    }
  }
  const leftovers = async () => ({
    triggers: (
      await log.db.adminQuery(
        'SELECT TRIGGER_NAME AS name FROM information_schema.TRIGGERS ' +
          "WHERE TRIGGER_SCHEMA = $1 AND TRIGGER_NAME LIKE 'team%'",
        [log.db.database],
      )
    ).length,
    tables: (
      await log.db.adminQuery(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = $1 AND TABLE_NAME LIKE 'team%'",
        [log.db.database],
      )
    ).length,
  });

  it("refuses, and drops nothing, where the user may not drop the triggers (the sync's own user)", async () => {
    await installLegacy();
    const error = await withConnection(log.syncUrl, (c) =>
      removeMysqlLegacy(c, { tables: TABLES, onWait: () => {} }),
    ).catch((e: unknown) => e);
    expect(sourceFault(error), String(error)).toBe('privileges');
    expect(await leftovers()).toEqual({ triggers: 6, tables: 2 });
    // The app writes on, its triggers still finding their table.
    await log.db.query('INSERT INTO items (id) VALUES (1)');
  });

  it('drops the triggers, then the tables, waiting at most 2 s at a time for a transaction of the app', async () => {
    const holder = await log.db.session();
    const writer = await log.db.session();
    const waits: string[] = [];
    try {
      // A transaction of the app that has read items holds its metadata lock until it ends.
      await holder.query('BEGIN');
      await holder.query('SELECT * FROM items');
      let ended: Promise<unknown> | undefined;
      const removal = withConnection(log.db.url, (c) =>
        removeMysqlLegacy(c, {
          tables: TABLES,
          onWait: (line) => {
            waits.push(line);
            ended ??= holder.query('COMMIT');
          },
        }),
      );
      // While the first DROP TRIGGER waits for the lock, the app's next write to items waits behind
      // it: no longer than the 2 s the DROP gives up after.
      await until(
        async () =>
          (
            await log.db.adminQuery(
              'SELECT 1 FROM information_schema.PROCESSLIST ' +
                "WHERE STATE = 'Waiting for table metadata lock' AND INFO LIKE 'DROP TRIGGER%'",
            )
          ).length > 0,
      );
      const started = performance.now();
      await writer.query('INSERT INTO items (id) VALUES (2)');
      expect(performance.now() - started).toBeLessThan(4_000);
      const lines = await removal;
      await ended;
      expect(waits.length).toBeGreaterThanOrEqual(1);
      expect(waits[0]).toMatch(/^waiting to drop the trigger team_resources_items_\w+: a transaction holds items \(/);
      // The triggers first (they write into the tables), then the tables.
      const triggers = TABLES.flatMap((t) =>
        ['insert', 'update', 'delete'].map((e) => `team_resources_${t}_${e} on ${t}`),
      );
      expect(lines.slice(0, 6).sort()).toEqual(triggers.map((t) => `dropped the trigger ${t}`).sort());
      expect(lines.slice(6)).toEqual([
        'dropped the table team_resources_changes',
        'dropped the table team_resources_sync',
      ]);
      expect(await leftovers()).toEqual({ triggers: 0, tables: 0 });
      await log.db.query('INSERT INTO items (id) VALUES (3)');
    } finally {
      await holder.close();
      await writer.close();
    }
  });

  it('does nothing where nothing is left', async () => {
    const waits: string[] = [];
    const lines = await withConnection(log.db.url, (c) =>
      removeMysqlLegacy(c, { tables: TABLES, onWait: (line) => waits.push(line) }),
    );
    expect(lines).toEqual([]);
    expect(waits).toEqual([]);
  });
});

/** Resolves once `condition` holds, looking again every 50 ms; fails after 10 s. */
async function until(condition: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error('the condition did not hold within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
