import { setTimeout as sleep } from 'node:timers/promises';
import type { Row, SourceConnection } from '../source/connection.ts';
import { binlogStatus } from './mysql-binlog.ts';

/**
 * What reading MySQL/MariaDB's binlog (mysql.ts) needs of the source, checked before the sync starts,
 * and the removal of what the earlier, trigger-based version installed (capture.ts).
 *
 * The sync's user needs three privileges and nothing more: SELECT on the tables it reads (the rows,
 * and their column names from INFORMATION_SCHEMA), REPLICATION SLAVE (to read the binlog as a replica
 * does: https://dev.mysql.com/doc/refman/8.0/en/privileges-provided.html#priv_replication-slave,
 * https://mariadb.com/kb/en/grant/#replication-slave) and REPLICATION CLIENT (SHOW MASTER STATUS and
 * SHOW BINARY LOGS: https://dev.mysql.com/doc/refman/8.0/en/privileges-provided.html#priv_replication-client;
 * MariaDB's BINLOG MONITOR since 10.5, which REPLICATION CLIENT still names). No RELOAD, SUPER,
 * TRIGGER, CREATE, DROP, INSERT or DELETE.
 */

/** RDS and Aurora set these in a parameter group, not in a configuration file. */
// https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/mysql_rds_set_configuration.html
const ON_RDS =
  'on RDS/Aurora: binlog_format=ROW in the DB (cluster) parameter group, and ' +
  "CALL mysql.rds_set_configuration('binlog retention hours', 24) so that a stopped sync still finds its binlog";

/**
 * Everything the source lacks for the binlog reader, one phrase each (empty: nothing). The server's
 * settings (https://dev.mysql.com/doc/refman/8.0/en/replication-options-binary-log.html,
 * https://mariadb.com/kb/en/replication-and-binary-log-system-variables/): binary logging on, in ROW
 * format (rows, not statements), with binlog_row_image=FULL (every column of the row before and after
 * a change, not only the key and the changed ones), and on MySQL no compressed transactions or
 * partial JSON updates. Then, for the running sync's user (`role: 'sync'`), its three privileges;
 * setup, which installs nothing on MySQL, may be run by any user that reads the settings.
 */
export async function mysqlRequirements(
  connection: SourceConnection,
  options: { tables: string[]; role?: 'setup' | 'sync' },
): Promise<string[]> {
  const missing: string[] = [];
  const [settings] = await connection.query<Row>(
    'SELECT @@GLOBAL.log_bin AS log_bin, @@GLOBAL.binlog_format AS format, @@GLOBAL.binlog_row_image AS image',
  );
  if (!/^(1|ON)$/i.test(String(settings?.log_bin))) {
    // RDS turns it on with automated backups (a retention period above 0):
    // https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/USER_LogAccess.MySQL.BinaryFormat.html
    missing.push(
      'binary logging (start the server with log_bin and a server_id; on RDS, turn on automated backups; ' +
        `${ON_RDS})`,
    );
  }
  if (String(settings?.format).toUpperCase() !== 'ROW') {
    missing.push(`binlog_format=ROW (it is ${settings?.format}: set it in the server's configuration; ${ON_RDS})`);
  }
  if (String(settings?.image).toUpperCase() !== 'FULL') {
    missing.push(
      `binlog_row_image=FULL (it is ${settings?.image}: set it in the server's configuration, on RDS/Aurora in ` +
        'the DB (cluster) parameter group)',
    );
  }
  // MySQL only (MariaDB has neither): transactions compressed into one event, and JSON updates logged
  // as diffs, are rows the reader cannot decode (@vlasky/zongji's README says so).
  for (const row of await connection.query<{ Variable_name: string; Value: string }>(
    "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('binlog_transaction_compression', 'binlog_row_value_options')",
  )) {
    const [name, value] = [String(row.Variable_name), String(row.Value)];
    if (name === 'binlog_transaction_compression' && /^(ON|1)$/i.test(value)) {
      missing.push('binlog_transaction_compression=OFF (compressed transactions cannot be read)');
    }
    if (name === 'binlog_row_value_options' && /PARTIAL_JSON/i.test(value)) {
      missing.push("binlog_row_value_options='' (partial JSON updates cannot be read)");
    }
  }
  if (options.role === 'setup') return missing;
  const unreadable: string[] = [];
  for (const table of options.tables) {
    try {
      await connection.query(`SELECT * FROM ${quoteName(table)} LIMIT 0`);
    } catch (error) {
      const code = (error as { code?: string }).code;
      // A missing table is the schema check's to name (to a user with no SELECT on the database, the
      // server says denied for a table that is not there too: it is named here then).
      if (code === 'ER_NO_SUCH_TABLE') continue;
      if (code !== 'ER_TABLEACCESS_DENIED_ERROR' && code !== 'ER_COLUMNACCESS_DENIED_ERROR') throw error;
      unreadable.push(table);
    }
  }
  if (unreadable.length > 0) missing.push(`SELECT on ${unreadable.join(', ')} (GRANT SELECT ON <database>.* TO …)`);
  if (!(await grantsReplicationSlave(connection))) {
    missing.push('REPLICATION SLAVE, to read the binlog (GRANT REPLICATION SLAVE ON *.* TO …)');
  }
  try {
    await binlogStatus((sql) => connection.query(sql));
  } catch (error) {
    if ((error as { code?: string }).code === 'ER_SPECIFIC_ACCESS_DENIED_ERROR') {
      missing.push('REPLICATION CLIENT, to read where the binlog ends (GRANT REPLICATION CLIENT ON *.* TO …)');
    } else if (!/binary logging is off/.test(String(error))) throw error;
  }
  return missing;
}

/**
 * Whether the user holds REPLICATION SLAVE, by its grants: no statement the user may run tells, short
 * of a binlog dump. MariaDB also calls it REPLICATION REPLICA (https://mariadb.com/kb/en/grant/). A
 * privilege granted only through a role is not seen here.
 */
async function grantsReplicationSlave(connection: SourceConnection): Promise<boolean> {
  const grants = (await connection.query<Row>('SHOW GRANTS')).map((row) => String(Object.values(row)[0]));
  return grants.some((grant) =>
    /^GRANT\s+(.*?)\s+ON\s+\*\.\*\s+TO\b/i
      .exec(grant)?.[1]
      ?.split(/\s*,\s*/)
      .some((privilege) => /^(ALL( PRIVILEGES)?|REPLICATION (SLAVE|REPLICA))$/i.test(privilege)),
  );
}

/** What the trigger-based version installed (capture.ts): a trigger per event and table, and two tables. */
const LEGACY_TABLES = ['team_resources_changes', 'team_resources_sync'];
const LEGACY_EVENTS = ['insert', 'update', 'delete'];
const legacyTrigger = (table: string, event: string) => `team_resources_${table}_${event}`.slice(0, 63);

/**
 * Each DDL waits at most this long for the table's metadata lock: while it waits, every query of the
 * app on that table queues behind it (https://mariadb.com/kb/en/metadata-locking/,
 * https://dev.mysql.com/doc/refman/8.0/en/server-system-variables.html#sysvar_lock_wait_timeout).
 */
const LOCK_WAIT_S = 2;
const ATTEMPTS = 5;
const PAUSE_MS = 1_000;

/**
 * Drops what the earlier, trigger-based version installed, if it is there: its triggers first (they
 * write into its tables: the app's writes would fail without them), then its two tables. Each DDL
 * waits at most 2 s for a lock the app's transactions hold, and is tried again a few times, saying
 * so through `onWait`. Returns a line for each thing dropped (none: nothing was there).
 *
 * Triggers the user may not see (it lacks TRIGGER on their table) are dropped by name for the
 * `tables` given: if one is there, the user is refused, and nothing else is dropped.
 */
export async function removeMysqlLegacy(
  connection: SourceConnection,
  options: { tables: string[]; onWait: (line: string) => void },
): Promise<string[]> {
  const seen = await connection.query<{ name: string; table: string }>(
    'SELECT TRIGGER_NAME AS name, EVENT_OBJECT_TABLE AS `table` FROM information_schema.TRIGGERS ' +
      "WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME LIKE 'team\\_resources\\_%'",
  );
  const tables = (
    await connection.query<{ name: string }>(
      'SELECT TABLE_NAME AS name FROM information_schema.TABLES ' +
        'WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?, ?)',
      LEGACY_TABLES,
    )
  ).map((row) => String(row.name));
  const unseen = options.tables
    .flatMap((table) => LEGACY_EVENTS.map((event) => ({ name: legacyTrigger(table, event), table })))
    .filter((trigger) => !seen.some((s) => s.name === trigger.name));
  if (seen.length === 0 && tables.length === 0) return [];
  const done: string[] = [];
  await connection.query(`SET SESSION lock_wait_timeout = ${LOCK_WAIT_S}`);
  try {
    const drop = (sql: string, table: string, what: string) => underShortLocks(connection, sql, table, what, options);
    // First those not seen: absent, or on a table the user has no TRIGGER on, which refuses this
    // before anything is dropped (the tables must stay while a trigger writes into them).
    for (const trigger of [...unseen, ...seen]) {
      const { name, table } = trigger;
      await drop(`DROP TRIGGER IF EXISTS ${quoteName(name)}`, table, `the trigger ${name}`);
      if (seen.includes(trigger)) done.push(`dropped the trigger ${name} on ${table}`);
    }
    for (const table of LEGACY_TABLES.filter((t) => tables.includes(t))) {
      await drop(`DROP TABLE IF EXISTS ${quoteName(table)}`, table, `the table ${table}`);
      done.push(`dropped the table ${table}`);
    }
  } finally {
    await connection.query('SET SESSION lock_wait_timeout = DEFAULT').catch(() => {});
  }
  return done;
}

/** A DDL that gives up on a lock after LOCK_WAIT_S, tried again ATTEMPTS times. */
async function underShortLocks(
  connection: SourceConnection,
  sql: string,
  table: string,
  what: string,
  options: { onWait: (line: string) => void },
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await connection.query(sql);
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== 'ER_LOCK_WAIT_TIMEOUT') throw error;
      if (attempt === ATTEMPTS) {
        throw new Error(
          `could not drop ${what}: a transaction held ${table} through ${ATTEMPTS} waits of ${LOCK_WAIT_S} s; ` +
            'run this again once the long transactions have ended',
          { cause: error },
        );
      }
      options.onWait(
        `waiting to drop ${what}: a transaction holds ${table} (gave up after ${LOCK_WAIT_S} s so as not to hold ` +
          `up the app; try ${attempt + 1} of ${ATTEMPTS} in ${PAUSE_MS / 1000} s)`,
      );
      await sleep(PAUSE_MS);
    }
  }
}

const quoteName = (name: string) => `\`${name.replaceAll('`', '``')}\``;
