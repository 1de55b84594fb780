import { setTimeout as sleep } from 'node:timers/promises';

/**
 * PostgreSQL's part of `sync setup` and `sync remove` for the log reader (postgres.ts): a publication of exactly
 * the tables the sync reads, REPLICA IDENTITY FULL where the sync needs the old row (or where a table has no
 * key, see below), and nothing else in the app's schema. What the earlier trigger-based capture installed
 * (capture.ts) is removed.
 *
 * Nothing here may hurt the app. Every statement that locks an app table runs in a transaction of its own
 * with a short lock_timeout (https://www.postgresql.org/docs/current/runtime-config-client.html#GUC-LOCK-TIMEOUT):
 * a DDL statement waiting for a lock makes every later query of that table wait behind it
 * (https://www.postgresql.org/docs/current/explicit-locking.html), so it waits at most LOCK_TIMEOUT_MS, says
 * what holds the lock, and tries again a few times; giving up rolls that step back, and leaves no session
 * holding anything (idle_in_transaction_session_timeout ends one the network cut mid-step). Locks taken:
 * ALTER TABLE … REPLICA IDENTITY takes ACCESS EXCLUSIVE (https://www.postgresql.org/docs/current/sql-altertable.html),
 * adding or removing a table of a publication SHARE UPDATE EXCLUSIVE (it waits only for DDL and VACUUM), and
 * DROP TRIGGER ACCESS EXCLUSIVE.
 *
 * A published table with no replica identity (no primary key, or REPLICA IDENTITY NOTHING) makes the app's
 * own UPDATEs and DELETEs of it fail (https://www.postgresql.org/docs/current/logical-replication-publication.html):
 * such a table is made FULL before it is published. Which tables setup made FULL is recorded in the
 * publication's comment, changed in the same transaction as the table, so that remove resets exactly those.
 *
 * The functions take any connection that runs one statement at a time with `?` parameters
 * (source.ts's SourceConnection).
 */
interface SqlClient {
  query<T extends Record<string, unknown> = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
}

const LOCK_TIMEOUT_MS = 2_000;
const ATTEMPTS = 3;
const RETRY_PAUSE_MS = 1_000;
/** The old capture's names (capture.ts). */
const OLD_TABLES = ['team_resources_changes', 'team_resources_sync'];
const RECORD = 'team-resources sync; REPLICA IDENTITY FULL set by setup on: ';

/** Setup or remove gave up on a lock: `done` says what was done before (each step whole, or not at all). */
export class SetupGaveUp extends Error {
  readonly done: string[];
  constructor(message: string, done: string[]) {
    super(message);
    this.name = 'SetupGaveUp';
    this.done = done;
  }
}

/**
 * What the source lacks for this role, one phrase each (empty: nothing). `setup`: the role owns the tables (it
 * publishes them and may change their replica identity) and may create a publication. `sync`: REPLICATION (on
 * RDS, membership of rds_replication) and SELECT on the tables, nothing more. Both: wal_level=logical.
 */
export async function postgresRequirements(
  client: SqlClient,
  options: { tables: string[]; role: 'setup' | 'sync'; slot?: string },
): Promise<string[]> {
  const [server] = await client.query<{
    wal_level: string;
    rds: string | null;
    superuser: boolean;
    replication: boolean;
    create: boolean;
    slots: number;
    max_slots: number;
    has_slot: boolean;
  }>(
    `SELECT current_setting('wal_level') AS wal_level, current_setting('rds.logical_replication', true) AS rds,
            r.rolsuper AS superuser,
            r.rolreplication OR EXISTS (SELECT 1 FROM pg_roles g WHERE g.rolname = 'rds_replication'
                                          AND pg_has_role(r.oid, g.oid, 'MEMBER')) AS replication,
            has_database_privilege(current_database(), 'CREATE') AS create,
            (SELECT count(*)::int FROM pg_replication_slots) AS slots,
            current_setting('max_replication_slots')::int AS max_slots,
            EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = ?) AS has_slot
       FROM pg_roles r WHERE r.rolname = current_user`,
    [options.slot ?? ''],
  );
  const missing: string[] = [];
  if (server!.wal_level !== 'logical')
    missing.push(
      `wal_level is ${server!.wal_level}, not logical (set wal_level=logical and restart; ` +
        'on RDS the parameter rds.logical_replication=1 and a reboot)',
    );
  if (options.role === 'sync') {
    // On RDS, REPLICATION is membership of rds_replication, and wal_level=logical is rds.logical_replication=1
    // (https://aws.amazon.com/premiumsupport/knowledge-center/rds-postgresql-use-logical-replication/).
    if (!server!.superuser && !server!.replication)
      missing.push(`the role lacks REPLICATION${server!.rds === null ? '' : ' (on RDS: GRANT rds_replication TO it)'}`);
    if (!server!.has_slot && server!.slots >= server!.max_slots)
      missing.push(`max_replication_slots is full (${server!.slots} of ${server!.max_slots} slots in use)`);
  } else if (!server!.superuser && !server!.create) {
    missing.push('CREATE on the database (to create the publication)');
  }
  for (const table of await tableStates(client, options.tables)) {
    if (!table.exists) missing.push(`the table ${table.name}`);
    else if (options.role === 'sync' && !table.can_select) missing.push(`SELECT on ${table.name}`);
    else if (options.role === 'setup' && !table.owns) missing.push(`ownership of ${table.name}`);
  }
  return missing;
}

/**
 * What keeps the sync from reading the log as setup leaves it, one phrase each (empty: prepared): the
 * publication, each table in it, and the replica identities.
 */
export async function postgresPrepared(
  client: SqlClient,
  options: { tables: string[]; fullIdentity: string[]; publication: string },
): Promise<string[]> {
  const publication = await publicationState(client, options.publication);
  if (!publication) return [`the publication ${options.publication} does not exist`];
  const missing: string[] = [];
  if (!publication.all_ops) missing.push(`the publication ${options.publication} does not publish every operation`);
  for (const table of await tableStates(client, options.tables)) {
    if (!publication.tables.includes(table.name)) missing.push(`${table.name} is not published`);
    if (needsFull(table, options.fullIdentity) && table.identity !== 'f')
      missing.push(`${table.name} is not REPLICA IDENTITY FULL`);
  }
  return missing;
}

/**
 * Makes the publication `publication` publish exactly `tables`, with REPLICA IDENTITY FULL on `fullIdentity`
 * (and on tables with no key), and removes the earlier capture. Idempotent. Returns what it did, one line each.
 * Throws SetupGaveUp when a lock stayed held (each step done whole or not at all; `done` lists those done).
 */
export async function preparePostgres(
  client: SqlClient,
  options: { tables: string[]; fullIdentity: string[]; publication: string; onWait: (line: string) => void },
): Promise<string[]> {
  const { publication, onWait } = options;
  const done: string[] = [];
  const name = ident(publication);
  let changed = 0;
  const step = async (statements: string[], locks: string[], what: string) => {
    await lockedStep(client, statements, locks, what, onWait, done);
    changed++;
  };
  const tables = await tableStates(client, options.tables, publication);
  const absent = tables.filter((table) => !table.exists).map((table) => table.name);
  if (absent.length) throw new Error(`no such table: ${absent.join(', ')}`);
  let state = await publicationState(client, publication);
  if (state?.all_tables) throw new Error(`the publication ${publication} is FOR ALL TABLES: not one setup made`);
  if (!state) {
    // Empty: it locks no table, and holds the record of what setup makes FULL from the first step on.
    await step([`CREATE PUBLICATION ${name}`, comment(publication, [])], [], `CREATE PUBLICATION ${name}`);
    done.push(`created the publication ${publication}`);
    state = (await publicationState(client, publication))!;
  } else if (!state.all_ops) {
    await step([`ALTER PUBLICATION ${name} SET (publish = 'insert, update, delete, truncate')`], [], 'publish');
    done.push(`the publication ${publication} publishes every operation again (insert, update, delete, truncate)`);
  }
  const recorded = new Set(state.recorded);

  for (const table of tables) {
    if (!needsFull(table, options.fullIdentity)) continue;
    const why = options.fullIdentity.includes(table.name)
      ? ''
      : ' (it has no primary key: its UPDATEs and DELETEs would fail once published)';
    if (table.identity === 'f') {
      done.push(`${table.name} is REPLICA IDENTITY FULL already${recorded.has(table.name) ? '' : ' (left as found)'}`);
      continue;
    }
    recorded.add(table.name);
    const sql = `ALTER TABLE ${ident(table.name)} REPLICA IDENTITY FULL`;
    await step([sql, comment(publication, recorded)], [table.name], sql);
    done.push(
      `${table.name}: REPLICA IDENTITY FULL${why}; the WAL now holds the old row of every UPDATE and DELETE ` +
        `of ${table.name} too`,
    );
  }

  for (const table of options.tables.filter((t) => !state.tables.includes(t))) {
    await step([`ALTER PUBLICATION ${name} ADD TABLE ${ident(table)}`], [table], `publishing ${table}`);
    done.push(`published ${table}`);
  }
  await unpublish(
    publication,
    state.tables.filter((t) => !options.tables.includes(t)),
    step,
    done,
  );

  // FULL that setup made and no longer needs (the mapping changed): DEFAULT again, where safe.
  const byName = new Map(tables.map((table) => [table.name, table]));
  for (const table of [...recorded]) {
    const now = byName.get(table) ?? (await tableStates(client, [table], publication))[0]!;
    if (now.exists && needsFull(now, options.fullIdentity) && options.tables.includes(table)) continue;
    recorded.delete(table);
    await resetIdentity(publication, now, recorded, step, done);
  }

  await removeOldCapture(client, step, done);
  done.push(`${changed ? '' : 'nothing to do: '}the publication ${publication} publishes ${options.tables.join(', ')}`);
  return done;
}

/**
 * Removes what setup made: the slot (it needs REPLICATION or superuser; a role without says which SQL the sync's
 * role must run), the publication, the REPLICA IDENTITY FULL setup recorded, and the earlier capture.
 * Refuses while a sync streams from the slot. Returns what it did, one line each. `tables` is not needed: the
 * publication and its record say what setup did, whatever the mapping has become since.
 */
export async function removePostgres(
  client: SqlClient,
  options: { tables: string[]; publication: string; slot: string; onWait: (line: string) => void },
): Promise<string[]> {
  const { publication, slot, onWait } = options;
  const done: string[] = [];
  const step = (statements: string[], locks: string[], what: string) =>
    lockedStep(client, statements, locks, what, onWait, done);
  const [slotState] = await client.query<{ active_pid: number | null; database: string; mine: boolean }>(
    `SELECT active_pid, database, database = current_database() AS mine FROM pg_replication_slots WHERE slot_name = ?`,
    [slot],
  );
  if (slotState?.mine && slotState.active_pid !== null)
    throw new Error(`a sync is reading the replication slot ${slot} (pid ${slotState.active_pid}): stop it first`);
  if (slotState && !slotState.mine) {
    done.push(`the replication slot ${slot} is of database ${slotState.database}, not this one: left as it is`);
  } else if (slotState) {
    try {
      await client.query('SELECT pg_drop_replication_slot(?)', [slot]);
      done.push(`dropped the replication slot ${slot} (the server keeps no WAL for it any more)`);
    } catch (error) {
      if ((error as { code?: string }).code !== '42501') throw error;
      done.push(
        `the replication slot ${slot} is left (dropping it needs REPLICATION, which this role lacks), and the ` +
          `server keeps WAL for it: as the sync's role run SELECT pg_drop_replication_slot('${slot}');`,
      );
    }
  }

  const state = await publicationState(client, publication);
  if (state) {
    // Unpublished first: a table without a key must not be published while its identity is DEFAULT.
    await unpublish(publication, state.tables, step, done);
    const recorded = new Set(state.recorded);
    for (const table of await tableStates(client, [...recorded], publication)) {
      recorded.delete(table.name);
      await resetIdentity(publication, table, recorded, step, done);
    }
    const drop = `DROP PUBLICATION ${ident(publication)}`;
    await step([drop], [], drop);
    done.push(`dropped the publication ${publication}`);
  }
  await removeOldCapture(client, step, done);
  if (done.length === 0) done.push(`nothing to remove: no publication ${publication}, no slot ${slot}`);
  return done;
}

type Step = (statements: string[], locks: string[], what: string) => Promise<void>;

interface TableState extends Record<string, unknown> {
  name: string;
  exists: boolean;
  can_select: boolean;
  owns: boolean;
  /** pg_class.relreplident: d(efault), f(ull), i(ndex), n(othing). */
  identity: string | null;
  /** Apart from FULL, the identity names a row: a primary key (DEFAULT, or FULL reset), a live USING INDEX. */
  keyed: boolean;
  /** In a publication other than setup's (remove must then keep FULL on a table with no key). */
  other_publication: boolean;
}

/** FULL is needed where the sync asks for it, and where the table's identity would name no row without it. */
const needsFull = (table: TableState, fullIdentity: string[]) => fullIdentity.includes(table.name) || !table.keyed;

async function tableStates(client: SqlClient, tables: string[], publication = ''): Promise<TableState[]> {
  return client.query<TableState>(
    `SELECT t.name, c.oid IS NOT NULL AS exists,
            COALESCE(has_table_privilege(c.oid, 'SELECT'), false) AS can_select,
            COALESCE(pg_has_role(c.relowner, 'USAGE'), false) AS owns, c.relreplident::text AS identity,
            CASE c.relreplident WHEN 'n' THEN false
              WHEN 'i' THEN EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisreplident)
              ELSE EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary) END AS keyed,
            EXISTS (SELECT 1 FROM pg_publication_tables p WHERE p.schemaname = current_schema()
                       AND p.tablename = t.name AND p.pubname <> ?) AS other_publication
       FROM unnest(?::text[]) WITH ORDINALITY AS t(name, n)
       LEFT JOIN pg_class c ON c.relname = t.name AND c.relkind IN ('r', 'p')
                           AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
      ORDER BY t.n`,
    [publication, tables],
  );
}

interface PublicationState {
  tables: string[];
  recorded: string[];
  all_tables: boolean;
  all_ops: boolean;
}

async function publicationState(client: SqlClient, publication: string): Promise<PublicationState | undefined> {
  const [row] = await client.query<{ tables: string[]; comment: string | null; all_tables: boolean; all_ops: boolean }>(
    `SELECT ARRAY(SELECT c.relname::text FROM pg_publication_rel r JOIN pg_class c ON c.oid = r.prrelid
                   WHERE r.prpubid = p.oid ORDER BY 1) AS tables,
            obj_description(p.oid, 'pg_publication') AS comment, p.puballtables AS all_tables,
            p.pubinsert AND p.pubupdate AND p.pubdelete AND p.pubtruncate AS all_ops
       FROM pg_publication p WHERE p.pubname = ?`,
    [publication],
  );
  if (!row) return undefined;
  const at = row.comment?.startsWith(RECORD) ? RECORD.length : -1;
  let recorded: string[] = [];
  try {
    if (at >= 0) recorded = JSON.parse(row.comment!.slice(at));
  } catch {
    // a comment someone else wrote: nothing recorded
  }
  return { tables: row.tables, recorded, all_tables: row.all_tables, all_ops: row.all_ops };
}

/** The publication's comment: the tables setup made FULL (https://www.postgresql.org/docs/current/sql-comment.html). */
const comment = (publication: string, tables: Iterable<string>) =>
  `COMMENT ON PUBLICATION ${ident(publication)} IS ${literal(RECORD + JSON.stringify([...tables].sort()))}`;

/** Back to DEFAULT, with the record, unless the table is gone, was changed since, or would break the app. */
async function resetIdentity(
  publication: string,
  table: TableState,
  recorded: Set<string>,
  step: Step,
  done: string[],
) {
  const record = comment(publication, recorded);
  const full = table.exists && table.identity === 'f';
  if (full && (table.keyed || !table.other_publication)) {
    const sql = `ALTER TABLE ${ident(table.name)} REPLICA IDENTITY DEFAULT`;
    await step([sql, record], [table.name], sql);
    done.push(`${table.name}: REPLICA IDENTITY DEFAULT again (as before setup)`);
    return;
  }
  await step([record], [], 'the record of REPLICA IDENTITY FULL');
  if (full)
    done.push(`${table.name} stays REPLICA IDENTITY FULL: it has no primary key and another publication has it`);
}

/** Takes tables out of the publication, each in a step of its own. */
async function unpublish(publication: string, tables: string[], step: Step, done: string[]) {
  for (const table of tables) {
    await step(
      [`ALTER PUBLICATION ${ident(publication)} DROP TABLE ${ident(table)}`],
      [table],
      `unpublishing ${table}`,
    );
    done.push(`no longer published: ${table}`);
  }
}

/** The triggers, functions and tables of the trigger-based capture (capture.ts), wherever they are. */
async function removeOldCapture(client: SqlClient, step: Step, done: string[]) {
  const triggers = await client.query<{ table: string; triggers: string[] }>(
    `SELECT c.relname AS table, array_agg(t.tgname::text ORDER BY t.tgname) AS triggers
       FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc f ON f.oid = t.tgfoid
      WHERE NOT t.tgisinternal AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
        AND t.tgname LIKE 'team\\_resources\\_%' AND f.proname LIKE 'team\\_resources\\_capture\\_%'
      GROUP BY c.relname ORDER BY c.relname`,
  );
  // Triggers first: a trigger left behind would fail every write of the app once its table is gone.
  for (const { table, triggers: names } of triggers) {
    const statements = names.map((trigger) => `DROP TRIGGER IF EXISTS ${ident(trigger)} ON ${ident(table)}`);
    await step(statements, [table], `removing the earlier capture's triggers on ${table}`);
    done.push(`removed the earlier capture's triggers on ${table} (${names.join(', ')})`);
  }
  const [old] = await client.query<{ functions: string[]; tables: string[] }>(
    `SELECT ARRAY(SELECT p.proname::text FROM pg_proc p WHERE p.proname LIKE 'team\\_resources\\_capture\\_%'
                     AND p.pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
                   ORDER BY 1) AS functions,
            ARRAY(SELECT t FROM unnest(?::text[]) t WHERE to_regclass(quote_ident(t)) IS NOT NULL) AS tables`,
    [OLD_TABLES],
  );
  if (old!.functions.length) {
    const statements = old!.functions.map((name) => `DROP FUNCTION IF EXISTS ${ident(name)}()`);
    await step(statements, [], "removing the earlier capture's functions");
    done.push(`removed the earlier capture's functions (${old!.functions.join(', ')})`);
  }
  if (old!.tables.length) {
    const tables = old!.tables.map(ident).join(', ');
    await step([`DROP TABLE IF EXISTS ${tables}`], old!.tables, "removing the earlier capture's tables");
    done.push(`removed the earlier capture's tables (${old!.tables.join(', ')})`);
  }
}

/**
 * `statements` in one transaction, each waiting at most LOCK_TIMEOUT_MS for a lock; a lock not had is said
 * (what holds it) and tried again, ATTEMPTS times in all, then SetupGaveUp. statement_timeout bounds the rest,
 * and idle_in_transaction_session_timeout ends the session if the connection is lost mid-step.
 */
async function lockedStep(
  client: SqlClient,
  statements: string[],
  locks: string[],
  what: string,
  onWait: (line: string) => void,
  done: string[],
) {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.query('BEGIN');
      await client.query(`SET LOCAL lock_timeout = ${LOCK_TIMEOUT_MS}`);
      await client.query(`SET LOCAL statement_timeout = ${4 * LOCK_TIMEOUT_MS}`);
      await client.query(`SET LOCAL idle_in_transaction_session_timeout = ${5 * LOCK_TIMEOUT_MS}`);
      for (const statement of statements) await client.query(statement);
      await client.query('COMMIT');
      return;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      if ((error as { code?: string }).code !== '55P03') throw error; // lock_not_available
      const held = await holders(client, locks);
      const line = `${what} waits for a lock on ${locks.join(', ') || 'the publication'} held by ${held}`;
      if (attempt === ATTEMPTS)
        throw new SetupGaveUp(
          `${line}: gave up after ${ATTEMPTS} tries of ${LOCK_TIMEOUT_MS / 1000} s (that step was not done; ` +
            'run it again once the lock is free)',
          done,
        );
      onWait(`${line}; trying again (${attempt + 1} of ${ATTEMPTS})`);
      await sleep(RETRY_PAUSE_MS);
    }
  }
}

/** Who holds a lock on these tables: pid, user, state and since when, and the statement where it may be seen. */
async function holders(client: SqlClient, tables: string[]): Promise<string> {
  const rows = await client
    .query<{ pid: number; usename: string | null; state: string | null; since: string | null; query: string | null }>(
      `SELECT DISTINCT l.pid, a.usename::text, a.state, to_char(a.xact_start, 'HH24:MI:SS') AS since, a.query
         FROM pg_locks l JOIN pg_class c ON c.oid = l.relation LEFT JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.granted AND l.pid <> pg_backend_pid() AND c.relname = ANY(?::text[])
          AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
        ORDER BY l.pid`,
      [tables],
    )
    .catch(() => []);
  if (rows.length === 0) return 'another session (free again when looked at)';
  return rows
    .map((row) => {
      const query = row.query && !row.query.startsWith('<') ? `: ${JSON.stringify(row.query.slice(0, 80))}` : '';
      const since = row.since ? ` since ${row.since}` : '';
      return `pid ${row.pid} (${row.usename ?? '?'}, ${row.state ?? '?'}${since}${query})`;
    })
    .join(', ');
}

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;
