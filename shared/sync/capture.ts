import { textFingerprint } from '../write/fingerprint.ts';
import { COLLECTION_COLUMNS, COLLECTIONS, type ChangePart, type Mapping, type Touch, type Watch } from './mapping.ts';
import type { Row, SourceConnection, SourceEngine } from './source.ts';

/**
 * Change capture by triggers into a change table (docs/sync.md, "How changes are found"): every
 * INSERT, UPDATE and DELETE of a watched table, from Eloquent or raw SQL, records in the same
 * transaction what it touches (a part of a team, a user, a token) in `team_resources_changes`.
 * The sync reads what is there and deletes exactly the rows it applied, so a transaction that
 * commits after a later one is read whenever it commits (no high-water mark can pass it by), and a
 * sync that was down finds every change it missed. Nothing here needs a superuser, REPLICATION,
 * `wal_level=logical` or the binlog's replication privileges: a PostgreSQL role that owns its
 * tables, or a MySQL user with the database's privileges (and, where the binlog is on,
 * `log_bin_trust_function_creators=1`).
 *
 * PostgreSQL: one statement-level trigger per event, with transition tables, so a statement that
 * changes 100,000 rows of a team records one row per team and part
 * (https://www.postgresql.org/docs/current/sql-createtrigger.html); foreign-key cascades fire the
 * child tables' triggers, and TRUNCATE has its own. Each commit that recorded a change notifies the
 * sync (pg_notify, delivered at commit: https://www.postgresql.org/docs/current/sql-notify.html).
 *
 * MySQL/MariaDB: row-level triggers (the only kind), the UPDATE one recording only when a watched
 * column changed; deletes are recorded BEFORE the row goes, so that a reference query can still see
 * what a cascade is about to remove. Cascaded foreign-key actions do not fire triggers
 * (https://dev.mysql.com/doc/refman/8.0/en/stored-program-restrictions.html,
 * https://mariadb.com/kb/en/trigger-limitations/), nor does TRUNCATE: the parent tables' triggers
 * record what a cascade touches where the default mapping knows it, and the sync's periodic full
 * pass catches the rest. CREATE TRIGGER needs the TRIGGER privilege, and with binary logging on,
 * SUPER or `log_bin_trust_function_creators`
 * (https://dev.mysql.com/doc/refman/8.0/en/create-trigger.html,
 * https://dev.mysql.com/doc/refman/8.0/en/stored-programs-logging.html).
 */
export const CHANGES_TABLE = 'team_resources_changes';
/** What setup installed, and from which mapping: a sync refuses a source that is not prepared as it reads it. */
export const SETUP_TABLE = 'team_resources_sync';
export const NOTIFY_CHANNEL = 'team_resources_changes';
/** Bumped whenever what setup installs changes, so that a sync asks for setup to be run again. */
const CAPTURE_VERSION = '1';

/** A recorded change: what it touches (ref null: every team's part, after a TRUNCATE), and how long ago. */
/** The changes recorded, as the sync applies them: what they touch, each once. */
export interface ChangeBatch {
  /** A part of a team, a user or a token by its id; `ref` null: a TRUNCATE, every team. */
  touched: { part: ChangePart; ref: string | null }[];
  /** How many changes were read. */
  count: number;
  /** Seconds since the oldest was recorded, by the source's clock. */
  oldestSeconds: number;
  /** The ids read, as runs of consecutive ids: deleted exactly these, a run at a time. */
  runs: [bigint, bigint][];
}

/** The fingerprint of what setup installs for a mapping: a sync compares it with the one recorded. */
export function captureFingerprint(engine: SourceEngine, mapping: Mapping): string {
  return textFingerprint(JSON.stringify([CAPTURE_VERSION, engine, mapping.watch]));
}

// ---- The schema, the role's privileges, the server's settings -------------------------------------

/**
 * What the source lacks for the mapping, named whole: every missing table and column, then
 * any collection query that does not run. Empty when nothing is missing.
 */
export async function missingSchema(source: SourceConnection, mapping: Mapping): Promise<string[]> {
  const wanted = new Map<string, Set<string>>();
  for (const [table, watch] of Object.entries(mapping.watch)) {
    wanted.set(table, new Set([watch.key ?? 'id', ...watch.columns]));
  }
  const present = new Map<string, Set<string>>();
  for (const row of await source.query<{ table_name: string; column_name: string }>(
    `SELECT table_name AS table_name, column_name AS column_name FROM information_schema.columns
     WHERE table_schema = ${source.engine === 'postgres' ? 'current_schema()' : 'DATABASE()'}`,
  )) {
    const table = String(row.table_name);
    if (!present.has(table)) present.set(table, new Set());
    present.get(table)!.add(String(row.column_name));
  }
  const missing: string[] = [];
  for (const [table, columns] of wanted) {
    const has = present.get(table);
    if (!has) missing.push(`table ${table}`);
    else {
      const absent = [...columns].filter((column) => !has.has(column));
      if (absent.length > 0) missing.push(`${table}.${absent.join(`, ${table}.`)}`);
    }
  }
  if (missing.length > 0) return missing;
  for (const collection of COLLECTIONS) {
    const columns = COLLECTION_COLUMNS[collection].map((c) => `q.${c}`).join(', ');
    try {
      await source.query(`SELECT ${columns} FROM (${mapping.queries[collection]}) q WHERE 1 = 0`);
    } catch (error) {
      missing.push(`the ${collection} query (${(error as Error).message})`);
    }
  }
  return missing;
}

/** What the role or the server does not allow that setup needs, one phrase each. */
export async function missingPrivileges(source: SourceConnection, mapping: Mapping): Promise<string[]> {
  const tables = Object.keys(mapping.watch);
  if (source.engine === 'postgres') {
    const missing: string[] = [];
    const [schema] = await source.query<{ create: boolean; super: boolean }>(
      'SELECT has_schema_privilege(current_schema(), \'CREATE\') AS "create", ' +
        '(SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS "super"',
    );
    if (!schema?.create) missing.push('CREATE on the schema (for the change table and its functions)');
    for (const table of tables) {
      const [row] = await source.query<{ trigger: boolean }>(
        'SELECT has_table_privilege(?, \'TRIGGER\') AS "trigger"',
        [table],
      );
      if (!row?.trigger) missing.push(`TRIGGER on ${table}`);
    }
    return missing;
  }
  const grants = new Set<string>();
  // 'user'@'host', as information_schema names a grantee.
  const grantee = `CONCAT("'", SUBSTRING_INDEX(CURRENT_USER(), '@', 1), "'@'",
    SUBSTRING_INDEX(CURRENT_USER(), '@', -1), "'")`;
  for (const row of await source.query<Row>(
    `SELECT privilege_type AS p FROM information_schema.schema_privileges
       WHERE table_schema = DATABASE() AND grantee = ${grantee}
     UNION SELECT privilege_type FROM information_schema.user_privileges WHERE grantee = ${grantee}`,
  )) {
    grants.add(String(row.p));
  }
  const missing = ['SELECT', 'INSERT', 'DELETE', 'CREATE', 'DROP', 'TRIGGER']
    .filter((p) => !grants.has(p))
    .map((p) => `${p} on the database`);
  const [settings] = await source.query<Row>('SELECT @@log_bin AS log_bin, @@log_bin_trust_function_creators AS trust');
  if (Number(settings?.log_bin) === 1 && Number(settings?.trust) !== 1 && !grants.has('SUPER')) {
    missing.push(
      'log_bin_trust_function_creators=1 (binary logging is on: without it, only SUPER may create triggers)',
    );
  }
  return missing;
}

// ---- Install, check, remove ---------------------------------------------------------------------------

/** The statements that prepare the source: the change table, the setup record, and the triggers. */
export function setupStatements(engine: SourceEngine, mapping: Mapping): string[] {
  return engine === 'postgres' ? postgresSetup(mapping) : mysqlSetup(mapping);
}

/** The statements that remove all of it. */
export function removeStatements(engine: SourceEngine, tables: string[]): string[] {
  if (engine === 'postgres') {
    return [
      ...tables.flatMap((table) => [
        ...EVENTS.map((event) => `DROP TRIGGER IF EXISTS ${triggerName(table, event)} ON ${table}`),
        `DROP FUNCTION IF EXISTS ${functionName(table)}()`,
      ]),
      `DROP TABLE IF EXISTS ${CHANGES_TABLE}`,
      `DROP TABLE IF EXISTS ${SETUP_TABLE}`,
    ];
  }
  return [
    ...tables.flatMap((table) =>
      EVENTS.filter((e) => e !== 'truncate').map((event) => `DROP TRIGGER IF EXISTS ${triggerName(table, event)}`),
    ),
    `DROP TABLE IF EXISTS ${CHANGES_TABLE}`,
    `DROP TABLE IF EXISTS ${SETUP_TABLE}`,
  ];
}

/** Whether setup was run for this mapping: its record, and every trigger it made. */
export async function preparedFor(
  source: SourceConnection,
  mapping: Mapping,
): Promise<'prepared' | 'not prepared' | 'another mapping'> {
  const tables = await source.query<{ table_name: string }>(
    `SELECT table_name AS table_name FROM information_schema.tables
     WHERE table_schema = ${source.engine === 'postgres' ? 'current_schema()' : 'DATABASE()'} AND table_name IN (?, ?)`,
    [CHANGES_TABLE, SETUP_TABLE],
  );
  if (tables.length < 2) return 'not prepared';
  const [record] = await source.query<{ value: string }>(`SELECT value FROM ${SETUP_TABLE} WHERE name = 'capture'`);
  if (!record) return 'not prepared';
  if (record.value !== captureFingerprint(source.engine, mapping)) return 'another mapping';
  const expected = Object.keys(mapping.watch).flatMap((table) =>
    EVENTS.filter((e) => source.engine === 'postgres' || e !== 'truncate').map((event) => triggerName(table, event)),
  );
  const found = new Set(
    (source.engine === 'postgres'
      ? await source.query<{ name: string }>('SELECT tgname AS name FROM pg_trigger WHERE NOT tgisinternal')
      : await source.query<{ name: string }>(
          'SELECT trigger_name AS name FROM information_schema.triggers WHERE trigger_schema = DATABASE()',
        )
    ).map((row) => String(row.name)),
  );
  return expected.every((name) => found.has(name)) ? 'prepared' : 'not prepared';
}

// ---- Reading and consuming changes ------------------------------------------------------------------

/** Up to `limit` recorded changes, oldest first, with their age by the source's clock. */
/**
 * Every change recorded, streamed (never the whole table in memory): read in the same snapshot as the
 * rows they name (the caller's readConsistently), so that a transaction committed meanwhile is in
 * neither and comes whole in the next batch, whatever its size.
 */
export async function readChanges(source: SourceConnection): Promise<ChangeBatch> {
  const age =
    source.engine === 'postgres'
      ? 'EXTRACT(EPOCH FROM (clock_timestamp() - changed_at))'
      : 'TIMESTAMPDIFF(MICROSECOND, changed_at, NOW(6)) / 1000000';
  const touched = new Map<string, { part: ChangePart; ref: string | null }>();
  const batch: ChangeBatch = { touched: [], count: 0, oldestSeconds: 0, runs: [] };
  await source.stream(`SELECT id, part, ref, ${age} AS age FROM ${CHANGES_TABLE} ORDER BY id`, [], (row) => {
    const id = BigInt(String(row.id));
    const last = batch.runs.at(-1);
    if (last && last[1] + 1n === id) last[1] = id;
    else batch.runs.push([id, id]);
    const ref = row.ref === null ? null : String(row.ref);
    touched.set(`${row.part} ${ref}`, { part: row.part as ChangePart, ref });
    batch.count += 1;
    batch.oldestSeconds = Math.max(batch.oldestSeconds, Number(row.age));
  });
  batch.touched = [...touched.values()];
  return batch;
}

/** Deletes exactly the changes read (once applied): a change recorded meanwhile stays for the next read. */
export async function consumeChanges(source: SourceConnection, batch: ChangeBatch): Promise<void> {
  for (let i = 0; i < batch.runs.length; i += 500) {
    const runs = batch.runs.slice(i, i + 500);
    await source.query(
      `DELETE FROM ${CHANGES_TABLE} WHERE ${runs.map(() => '(id BETWEEN ? AND ?)').join(' OR ')}`,
      runs.flatMap(([first, last]) => [String(first), String(last)]),
    );
  }
}

// ---- The DDL -----------------------------------------------------------------------------------------

const EVENTS = ['insert', 'update', 'delete', 'truncate'] as const;
type Event = (typeof EVENTS)[number];

const triggerName = (table: string, event: Event) => `team_resources_${table}_${event}`.slice(0, 63);
const functionName = (table: string) => `team_resources_capture_${table}`.slice(0, 63);

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** The SELECT of (part, ref) pairs a row touches, for these touches, the row called `row`. */
function touched(touches: Touch[], row: string): string {
  return touches
    .map((touch) => `SELECT ${quote(touch.part)} AS part, x.ref FROM (${touch.ref.replaceAll('{row}', row)}) x`)
    .join(' UNION ALL ');
}

const touchesOn = (watch: Watch, event: 'insert' | 'update' | 'delete') =>
  watch.touches.filter((touch) => (touch.on ?? ['insert', 'update', 'delete']).includes(event));

function setupRecord(engine: SourceEngine, mapping: Mapping): string[] {
  const value = quote(captureFingerprint(engine, mapping));
  return engine === 'postgres'
    ? [
        `CREATE TABLE IF NOT EXISTS ${SETUP_TABLE} (name varchar(32) PRIMARY KEY, value text NOT NULL)`,
        `INSERT INTO ${SETUP_TABLE} (name, value) VALUES ('capture', ${value})
           ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`,
      ]
    : [
        `CREATE TABLE IF NOT EXISTS ${SETUP_TABLE} (name varchar(32) PRIMARY KEY, value text NOT NULL) ENGINE=InnoDB`,
        `INSERT INTO ${SETUP_TABLE} (name, value) VALUES ('capture', ${value})
           ON DUPLICATE KEY UPDATE value = VALUES(value)`,
      ];
}

function postgresSetup(mapping: Mapping): string[] {
  const statements = [
    `CREATE TABLE IF NOT EXISTS ${CHANGES_TABLE} (
       id bigserial PRIMARY KEY,
       part varchar(16) NOT NULL,
       ref bigint,
       changed_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
  ];
  for (const [table, watch] of Object.entries(mapping.watch)) {
    const key = watch.key ?? 'id';
    const columns = (alias: string) => watch.columns.map((c) => `${alias}.${c}`).join(', ');
    const differs = `ROW(${columns('o')}) IS DISTINCT FROM ROW(${columns('n')})`;
    const record = (touches: Touch[], rows: string) =>
      touches.length === 0
        ? 'NULL;'
        : `INSERT INTO ${CHANGES_TABLE} (part, ref)
             SELECT DISTINCT t.part, t.ref FROM ${rows} CROSS JOIN LATERAL (${touched(touches, 'r')}) t
             WHERE t.ref IS NOT NULL;`;
    const changedRows = `(
        SELECT o.* FROM old_rows o LEFT JOIN new_rows n ON n.${key} = o.${key}
          WHERE n.${key} IS NULL OR ${differs}
        UNION ALL
        SELECT n.* FROM new_rows n LEFT JOIN old_rows o ON o.${key} = n.${key}
          WHERE o.${key} IS NULL OR ${differs}) r`;
    const everyTeam = [...new Set(watch.touches.map((touch) => touch.part))]
      .map((part) => `(${quote(part)}, NULL)`)
      .join(', ');
    statements.push(
      `CREATE OR REPLACE FUNCTION ${functionName(table)}() RETURNS trigger LANGUAGE plpgsql AS $capture$
       BEGIN
         IF TG_OP = 'INSERT' THEN ${record(touchesOn(watch, 'insert'), 'new_rows r')}
         ELSIF TG_OP = 'DELETE' THEN ${record(touchesOn(watch, 'delete'), 'old_rows r')}
         ELSIF TG_OP = 'UPDATE' THEN ${record(touchesOn(watch, 'update'), changedRows)}
         ELSE INSERT INTO ${CHANGES_TABLE} (part, ref) VALUES ${everyTeam};
         END IF;
         PERFORM pg_notify('${NOTIFY_CHANNEL}', '');
         RETURN NULL;
       END $capture$`,
      ...EVENTS.map((event) => `DROP TRIGGER IF EXISTS ${triggerName(table, event)} ON ${table}`),
      `CREATE TRIGGER ${triggerName(table, 'insert')} AFTER INSERT ON ${table}
         REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${functionName(table)}()`,
      `CREATE TRIGGER ${triggerName(table, 'update')} AFTER UPDATE ON ${table}
         REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
         FOR EACH STATEMENT EXECUTE FUNCTION ${functionName(table)}()`,
      `CREATE TRIGGER ${triggerName(table, 'delete')} AFTER DELETE ON ${table}
         REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ${functionName(table)}()`,
      `CREATE TRIGGER ${triggerName(table, 'truncate')} AFTER TRUNCATE ON ${table}
         FOR EACH STATEMENT EXECUTE FUNCTION ${functionName(table)}()`,
    );
  }
  return [...statements, ...setupRecord('postgres', mapping)];
}

function mysqlSetup(mapping: Mapping): string[] {
  const statements = [
    `CREATE TABLE IF NOT EXISTS ${CHANGES_TABLE} (
       id bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY,
       part varchar(16) NOT NULL,
       ref bigint NULL,
       changed_at timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB`,
  ];
  const insert = (touches: Touch[], row: 'OLD' | 'NEW') =>
    touches.length === 0
      ? ''
      : `INSERT INTO ${CHANGES_TABLE} (part, ref)
           SELECT t.part, t.ref FROM (${touched(touches, row)}) t WHERE t.ref IS NOT NULL;`;
  for (const [table, watch] of Object.entries(mapping.watch)) {
    // Compared as bytes: a case-insensitive collation would take 'Globex' and 'GLOBEX' (and, in the
    // UCA collations, a name with a control character and one without) for the same value.
    const unchanged = watch.columns.map((c) => `CAST(OLD.${c} AS BINARY) <=> CAST(NEW.${c} AS BINARY)`).join(' AND ');
    const bodies: [Event, string, string][] = [
      ['insert', 'AFTER INSERT', insert(touchesOn(watch, 'insert'), 'NEW')],
      [
        'update',
        'AFTER UPDATE',
        touchesOn(watch, 'update').length === 0
          ? ''
          : `IF NOT (${unchanged}) THEN ${insert(touchesOn(watch, 'update'), 'OLD')} ` +
            `${insert(touchesOn(watch, 'update'), 'NEW')} END IF;`,
      ],
      // Before the row goes: a cascade it sets off has not yet removed what the reference reads.
      ['delete', 'BEFORE DELETE', insert(touchesOn(watch, 'delete'), 'OLD')],
    ];
    for (const [event, timing, body] of bodies) {
      statements.push(
        `DROP TRIGGER IF EXISTS ${triggerName(table, event)}`,
        `CREATE TRIGGER ${triggerName(table, event)} ${timing} ON ${table} FOR EACH ROW BEGIN ${body || 'DO 0;'} END`,
      );
    }
  }
  return [...statements, ...setupRecord('mysql', mapping)];
}
