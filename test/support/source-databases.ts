import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { describe, inject } from 'vitest';
import { ENGINE_NAMES, SOURCE_ENGINES, type SourceEngine, type SourceServerStatus } from './source-servers.ts';

/**
 * Fresh databases in the suite's source servers (source-servers.ts), each with an application role
 * that has at most what contract section 9 allows, and the Laravel schema loaded:
 *
 *   const db = await createSourceDatabase('postgres');
 *   await seedSource(db, { teams: [team(1)], ... });               // source-seed.ts
 *   await db.query('UPDATE projects SET name = $1 WHERE id = $2', ['New', 100]);
 *   ... the sync under test gets db.url ...
 *   await db.drop();
 *
 * One way to write parameters on both engines: `$1`, `$2` (PostgreSQL's own; rewritten to MySQL's `?`).
 * Rows come back alike from both: bigint and decimal columns as strings (exact), timestamps as the
 * text the column holds ('2026-01-02 03:04:05', UTC), booleans as booleans, int as numbers.
 */

export type Row = Record<string, unknown>;

export interface SourceSession {
  /** One statement, parameters as `$1`, `$2`; the rows it returns (none for a statement without result). */
  query<T extends Row = Row>(sql: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

export interface SourceDatabase {
  engine: SourceEngine;
  /** The application role's URL: what the sync is given (postgres://… or mysql://…). */
  url: string;
  /** A superuser's URL on this database. */
  adminUrl: string;
  database: string;
  /** The application role (PostgreSQL) or user (MySQL, as user@'%'), and its password. */
  user: string;
  password: string;
  /**
   * The sync's own role, with exactly what contract section 9 lets the running sync have: on
   * PostgreSQL REPLICATION and SELECT on the tables (those the app creates later too); on MySQL SELECT
   * on the database, REPLICATION SLAVE and REPLICATION CLIENT. What the sync under test is given.
   */
  syncUrl: string;
  /** As the application role, on a pooled connection. */
  query<T extends Row = Row>(sql: string, params?: unknown[]): Promise<T[]>;
  /** As the superuser, on this database. */
  adminQuery<T extends Row = Row>(sql: string, params?: unknown[]): Promise<T[]>;
  /** A connection of its own as the application role: for transactions held open across statements. */
  session(): Promise<SourceSession>;
  /** The same as the superuser. */
  adminSession(): Promise<SourceSession>;
  /** Closes the pools, ends the role's sessions, drops the database and the role. */
  drop(): Promise<void>;
}

export interface SourceDatabaseOptions {
  /** Load the Laravel schema (laravel-schema.<engine>.sql); default true. False: an empty database. */
  schema?: boolean;
  /**
   * What a change capture by replication needs besides: PostgreSQL's REPLICATION attribute; MySQL's
   * RELOAD, REPLICATION SLAVE and REPLICATION CLIENT. Default false.
   */
  replication?: boolean;
  /**
   * Less than the contract's maximum, to test that the sync's setup names what is missing: only these
   * privileges. PostgreSQL: table privileges (SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES,
   * TRIGGER) on every table, and the role owns neither the database nor the tables (the admin does);
   * MySQL: these privileges on the database instead of ALL PRIVILEGES (e.g. all but TRIGGER).
   */
  privileges?: string[];
  /** Another server than the suite's: one a test started (startPostgres, startMariaDb) with other settings. */
  server?: { engine: SourceEngine; adminUrl: string };
}

/** The suite's server of that engine, as global-setup.ts started it. */
export function sourceServer(engine: SourceEngine): SourceServerStatus {
  return inject('sourceServers')[engine];
}

/**
 * describe() once per engine, named after it, and skipped where that engine's server is not installed
 * (the suite has said so in one line). A server that is installed but did not start is not skipped:
 * its tests fail with the reason.
 */
export function describeSources(name: string, body: (engine: SourceEngine) => void) {
  for (const engine of SOURCE_ENGINES)
    describe.skipIf(sourceServer(engine).state === 'missing')(`${name} (${ENGINE_NAMES[engine]})`, () => body(engine));
}

export async function createSourceDatabase(
  engine: SourceEngine,
  options: SourceDatabaseOptions = {},
): Promise<SourceDatabase> {
  const adminUrl = options.server?.adminUrl ?? runningServer(engine);
  const name = `src_${randomBytes(5).toString('hex')}`;
  const password = randomBytes(16).toString('hex');
  const url = withDatabase(adminUrl, name, { user: name, password });
  const databaseAdminUrl = withDatabase(adminUrl, name);
  const maximum = options.privileges === undefined;
  const schema =
    (options.schema ?? true) ? readFileSync(new URL(`./laravel-schema.${engine}.sql`, import.meta.url), 'utf8') : '';

  if (engine === 'postgres') {
    await withPgClient(adminUrl, async (admin) => {
      // Never a superuser, nor one that creates databases or roles: the contract's role owns its
      // database and tables, and has REPLICATION only when asked.
      await admin.query(
        `CREATE ROLE "${name}" LOGIN PASSWORD '${password}' NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS ` +
          (options.replication ? 'REPLICATION' : 'NOREPLICATION'),
      );
      await admin.query(`CREATE DATABASE "${name}"${maximum ? ` OWNER "${name}"` : ''}`);
    });
    if (maximum) {
      // Laravel's migrations run as the application's role, which so owns every table.
      if (schema) await withPgClient(url, (app) => app.query(schema));
    } else {
      await withPgClient(databaseAdminUrl, async (admin) => {
        if (schema) await admin.query(schema);
        const privileges = options.privileges!.join(', ');
        if (privileges) await admin.query(`GRANT ${privileges} ON ALL TABLES IN SCHEMA public TO "${name}"`);
        // Inserts without an id draw from the tables' sequences.
        if (options.privileges!.includes('INSERT'))
          await admin.query(`GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO "${name}"`);
      });
    }
  } else {
    await withMysqlConnection(adminUrl, async (admin) => {
      await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
      await admin.query(`CREATE USER '${name}'@'%' IDENTIFIED BY '${password}'`);
      const privileges = maximum ? 'ALL PRIVILEGES' : options.privileges!.join(', ');
      if (privileges) await admin.query(`GRANT ${privileges} ON \`${name}\`.* TO '${name}'@'%'`);
      if (options.replication)
        await admin.query(`GRANT RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '${name}'@'%'`);
    });
    // As on PostgreSQL, the role with the maximum runs the migrations; a role with less cannot.
    if (schema) await withMysqlConnection(maximum ? url : databaseAdminUrl, (c) => c.query(schema));
  }

  const syncUser = `${name}_sync`;
  const syncUrl = withDatabase(adminUrl, name, { user: syncUser, password });
  if (engine === 'postgres') {
    const owner = maximum ? name : 'postgres';
    await withPgClient(databaseAdminUrl, async (admin) => {
      await admin.query(`CREATE ROLE "${syncUser}" LOGIN PASSWORD '${password}' REPLICATION`);
      await admin.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO "${syncUser}"`);
      await admin.query(
        `ALTER DEFAULT PRIVILEGES FOR ROLE "${owner}" IN SCHEMA public GRANT SELECT ON TABLES TO "${syncUser}"`,
      );
    });
  } else {
    await withMysqlConnection(adminUrl, async (admin) => {
      await admin.query(`CREATE USER '${syncUser}'@'%' IDENTIFIED BY '${password}'`);
      await admin.query(`GRANT SELECT ON \`${name}\`.* TO '${syncUser}'@'%'`);
      await admin.query(`GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '${syncUser}'@'%'`);
    });
  }

  const app = pool(engine, url);
  const admin = pool(engine, databaseAdminUrl);
  return {
    engine,
    url,
    adminUrl: databaseAdminUrl,
    database: name,
    user: name,
    password,
    syncUrl,
    query: app.query,
    adminQuery: admin.query,
    session: () => connectSource(engine, url),
    adminSession: () => connectSource(engine, databaseAdminUrl),
    drop: async () => {
      await Promise.all([app.end(), admin.end()]);
      await dropDatabase(engine, adminUrl, name);
    },
  };
}

function runningServer(engine: SourceEngine): string {
  const status = sourceServer(engine);
  if (status.state !== 'running') throw new Error(status.message);
  return status.adminUrl;
}

function withDatabase(serverUrl: string, database: string, credentials?: { user: string; password: string }) {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  if (credentials) {
    url.username = credentials.user;
    url.password = credentials.password;
  }
  return url.href;
}

async function dropDatabase(engine: SourceEngine, adminUrl: string, name: string) {
  if (engine === 'postgres') {
    await withPgClient(adminUrl, async (admin) => {
      // A replication slot (a sync's, for instance) keeps a database from being dropped: end the
      // session that holds it, then drop it; FORCE ends the database's other sessions.
      for (let attempt = 1; ; attempt++) {
        try {
          await admin.query(
            'SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE database = $1 AND active_pid IS NOT NULL',
            [name],
          );
          await admin.query(
            'SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1',
            [name],
          );
          break;
        } catch (error) {
          // A slot stays active for a moment after its session is told to end.
          if (attempt === 20) throw error;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      // The sync's role holds default privileges granted by the owner: both go, the grants with them.
      await admin.query(`DROP OWNED BY "${name}_sync"`).catch(() => {});
      await admin.query(`DROP ROLE IF EXISTS "${name}_sync"`);
      await admin.query(`DROP ROLE IF EXISTS "${name}"`);
    });
  } else {
    await withMysqlConnection(adminUrl, async (admin) => {
      // A session left in a transaction would hold DROP DATABASE on its metadata lock.
      const [sessions] = await admin.query<mysql.RowDataPacket[]>(
        'SELECT ID FROM information_schema.PROCESSLIST WHERE USER IN (?, ?)',
        [name, `${name}_sync`],
      );
      for (const { ID } of sessions) await admin.query(`KILL ${Number(ID)}`).catch(() => {});
      await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await admin.query(`DROP USER IF EXISTS '${name}'@'%'`);
      await admin.query(`DROP USER IF EXISTS '${name}_sync'@'%'`);
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Connections. Each query runs one statement; rows are converted alike on both engines.

/** PostgreSQL: timestamps and dates as their text (node-postgres would make local-time Dates of them). */
const pgTypes = {
  getTypeParser: ((oid: number, format?: string) =>
    [pg.types.builtins.TIMESTAMP, pg.types.builtins.TIMESTAMPTZ, pg.types.builtins.DATE].includes(oid)
      ? (value: string) => value
      : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/** MySQL: bigint and decimal as strings, timestamps as text, tinyint(1) (Laravel's boolean) as a boolean. */
const mysqlOptions = {
  supportBigNumbers: true,
  bigNumberStrings: true,
  dateStrings: true,
  timezone: 'Z',
  typeCast: (field: { type: string; length: number; string(): string | null }, next: () => unknown) => {
    if (field.type === 'TINY' && field.length === 1) {
      const value = field.string();
      return value === null ? null : value === '1';
    }
    return next();
  },
} satisfies Partial<mysql.PoolOptions>;

function pool(engine: SourceEngine, url: string) {
  if (engine === 'postgres') {
    const pool = new pg.Pool({ connectionString: url, types: pgTypes, max: 4 });
    pool.on('error', () => {}); // an idle connection ended by the server (a test stopping it) is no failure
    return {
      query: async <T extends Row>(sql: string, params?: unknown[]) => (await pool.query(sql, params)).rows as T[],
      end: () => pool.end(),
    };
  }
  const pool = mysql.createPool({ uri: url, connectionLimit: 4, ...mysqlOptions });
  return {
    query: async <T extends Row>(sql: string, params?: unknown[]) =>
      mysqlRows<T>(await pool.query(...mysqlArgs(sql, params))),
    end: () => pool.end(),
  };
}

/** A connection of its own to any URL of that engine (the conversions and `$1` parameters as above). */
export async function connectSource(engine: SourceEngine, url: string): Promise<SourceSession> {
  if (engine === 'postgres') {
    const client = new pg.Client({ connectionString: url, types: pgTypes });
    client.on('error', () => {});
    await client.connect();
    return {
      query: async <T extends Row>(sql: string, params?: unknown[]) => (await client.query(sql, params)).rows as T[],
      close: () => client.end(),
    };
  }
  const connection = await mysql.createConnection({ uri: url, ...mysqlOptions });
  connection.on('error', () => {});
  return {
    query: async <T extends Row>(sql: string, params?: unknown[]) =>
      mysqlRows<T>(await connection.query(...mysqlArgs(sql, params))),
    close: () => connection.end(),
  };
}

function mysqlRows<T>([result]: [unknown, unknown]): T[] {
  return Array.isArray(result) ? (result as T[]) : [];
}

function mysqlArgs(sql: string, params?: unknown[]): [string, unknown[]] {
  return params === undefined ? [sql, []] : toMysqlPlaceholders(sql, params);
}

/**
 * `$1`, `$2`… written as MySQL's `?`, with the parameters in the order the placeholders appear (so
 * `$1` may appear twice). Quoted strings and identifiers and comments are left as they are.
 */
export function toMysqlPlaceholders(sql: string, params: unknown[]): [string, unknown[]] {
  const ordered: unknown[] = [];
  const text = sql.replace(
    /'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*"|`(?:[^`]|``)*`|--[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/|\$(\d+)/g,
    (match, index: string | undefined) => {
      if (index === undefined) return match;
      const n = Number(index);
      if (n < 1 || n > params.length) throw new Error(`$${n} has no parameter (${params.length} given)`);
      ordered.push(params[n - 1]);
      return '?';
    },
  );
  return [text, ordered];
}

async function withPgClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function withMysqlConnection<T>(url: string, work: (connection: mysql.Connection) => Promise<T>): Promise<T> {
  // Several statements at once for the schema file; only this short-lived connection allows them.
  const connection = await mysql.createConnection({ uri: url, multipleStatements: true });
  try {
    return await work(connection);
  } finally {
    await connection.end();
  }
}
