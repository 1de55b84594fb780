import type { SourceEngine } from './source.ts';

/**
 * How the sync reads the source (docs/contract.md, section 9; docs/sync.md, "A schema that
 * differs"): a query per collection, and which source tables to watch for changes, with what a
 * changed row touches. The default is Laravel's conventions (Jetstream's teams, Sanctum's tokens);
 * a mapping file replaces any query and any table's watch, and the rest stays the default.
 *
 * A collection's query may be any SELECT that returns its columns by these names; the sync reads it
 * as a derived table (`SELECT … FROM (<query>) q WHERE …`), so a query needs no filter of its own.
 * A watch entry names, for a table, the columns whose change matters (an UPDATE that changes none
 * of them is not a change: Sanctum's `last_used_at`) and what a changed row touches: a part of a
 * team, a user or a token, as a SELECT of the ids (`AS ref`) written over the row as `{row}`.
 */

/** What a change touches: a part of a team (by team id), a user (by user id), a token (by token id). */
export const CHANGE_PARTS = ['team', 'members', 'projects', 'daemons', 'finance', 'user', 'token'] as const;
export type ChangePart = (typeof CHANGE_PARTS)[number];

export type Collection =
  | 'teams'
  | 'users'
  | 'team_user'
  | 'tokens'
  | 'environments'
  | 'servers'
  | 'clients'
  | 'projects'
  | 'daemons'
  | 'costs';

/** The columns each collection's query returns, in this order. */
export const COLLECTION_COLUMNS: Record<Collection, readonly string[]> = {
  teams: ['id', 'slug', 'name', 'user_id'],
  users: ['id', 'name'],
  team_user: ['team_id', 'user_id'],
  tokens: ['id', 'user_id', 'name', 'token', 'abilities', 'expires_at'],
  environments: ['id', 'team_id'],
  servers: ['id', 'team_id', 'monthly_cost', 'currency'],
  clients: ['id', 'team_id'],
  projects: ['id', 'team_id', 'client_id', 'name', 'slug', 'created_at'],
  daemons: ['id', 'environment_id', 'server_id', 'name', 'command', 'username', 'directory', 'processes'],
  costs: ['id', 'team_id', 'label', 'amount', 'currency'],
};
export const COLLECTIONS = Object.keys(COLLECTION_COLUMNS) as Collection[];

export interface Touch {
  part: ChangePart;
  /** A SELECT of the ids the row touches, as `ref`; `{row}` stands for the row (OLD or NEW). */
  ref: string;
  /** The statements it is recorded for (default: all three). */
  on?: ('insert' | 'update' | 'delete')[];
}

export interface Watch {
  /** A column that names a row across an UPDATE (default `id`). */
  key?: string;
  /** The columns whose change is a change; an UPDATE that changes none of them is not recorded. */
  columns: string[];
  touches: Touch[];
}

export interface Mapping {
  queries: Record<Collection, string>;
  watch: Record<string, Watch>;
}

const select = (table: string, columns: string) => `SELECT ${columns} FROM ${table}`;
const teamRef = 'SELECT {row}.team_id AS ref';

/**
 * Laravel's conventions. Sanctum's tokens belong to a model by `tokenable_type`; only users'
 * count. The class name holds backslashes, which MySQL reads in a literal as escapes or not,
 * by the server's sql_mode (NO_BACKSLASH_ESCAPES), so there it is written as a hex literal with a
 * character set introducer: a plain literal still, which takes the column's collation
 * (https://dev.mysql.com/doc/refman/8.0/en/charset-introducer.html).
 */
export function defaultMapping(engine: SourceEngine): Mapping {
  const userModel =
    engine === 'postgres'
      ? String.raw`'App\Models\User'`
      : `_utf8mb4 X'${Buffer.from(String.raw`App\Models\User`).toString('hex')}'`;
  return {
    queries: {
      teams: select('teams', 'id, slug, name, user_id'),
      users: select('users', 'id, name'),
      team_user: select('team_user', 'team_id, user_id'),
      tokens:
        'SELECT id, tokenable_id AS user_id, name, token, abilities, expires_at FROM personal_access_tokens ' +
        `WHERE tokenable_type = ${userModel}`,
      environments: select('environments', 'id, team_id'),
      servers: select('servers', 'id, team_id, monthly_cost, currency'),
      clients: select('clients', 'id, team_id'),
      projects: select('projects', 'id, team_id, client_id, name, slug, created_at'),
      daemons: select('daemons', 'id, environment_id, server_id, name, command, username, directory, processes'),
      costs: select('costs', 'id, team_id, label, amount, currency'),
    },
    watch: {
      teams: { columns: ['id', 'slug', 'name', 'user_id'], touches: [{ part: 'team', ref: 'SELECT {row}.id AS ref' }] },
      users: { columns: ['id', 'name'], touches: [{ part: 'user', ref: 'SELECT {row}.id AS ref' }] },
      team_user: { key: 'id', columns: ['team_id', 'user_id'], touches: [{ part: 'members', ref: teamRef }] },
      personal_access_tokens: {
        // Not last_used_at, nor the updated_at that Sanctum's save writes with it.
        columns: ['id', 'tokenable_type', 'tokenable_id', 'name', 'token', 'abilities', 'expires_at'],
        touches: [{ part: 'token', ref: 'SELECT {row}.id AS ref' }],
      },
      environments: { columns: ['id', 'team_id'], touches: [{ part: 'daemons', ref: teamRef }] },
      servers: {
        columns: ['id', 'team_id', 'monthly_cost', 'currency'],
        touches: [
          { part: 'finance', ref: teamRef },
          // A daemon names a server of any team: the daemons of whatever teams name it.
          {
            part: 'daemons',
            on: ['insert', 'delete'],
            ref:
              'SELECT e.team_id AS ref FROM daemons d JOIN environments e ON e.id = d.environment_id ' +
              'WHERE d.server_id = {row}.id',
          },
        ],
      },
      clients: { columns: ['id', 'team_id'], touches: [{ part: 'projects', ref: teamRef }] },
      projects: {
        columns: ['id', 'team_id', 'client_id', 'name', 'slug', 'created_at'],
        touches: [{ part: 'projects', ref: teamRef }],
      },
      daemons: {
        columns: ['id', 'environment_id', 'server_id', 'name', 'command', 'username', 'directory', 'processes'],
        touches: [
          { part: 'daemons', ref: 'SELECT e.team_id AS ref FROM environments e WHERE e.id = {row}.environment_id' },
        ],
      },
      costs: {
        columns: ['id', 'team_id', 'label', 'amount', 'currency'],
        touches: [{ part: 'finance', ref: teamRef }],
      },
    },
  };
}

/** A mapping file's problem: its one line names the file's key. */
export class MappingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MappingError';
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The default mapping with a mapping file's replacements: `{"queries": {<collection>: <SELECT>},
 * "watch": {<table>: <watch> | null}}` (null stops watching a table). Checked whole; the first
 * problem is named by its key.
 */
export function withMappingFile(defaults: Mapping, file: unknown): Mapping {
  if (!isRecord(file)) throw new MappingError('the mapping must be a JSON object with "queries" and/or "watch"');
  for (const key of Object.keys(file)) {
    if (key !== 'queries' && key !== 'watch')
      throw new MappingError(`unknown key "${key}" (use "queries" and "watch")`);
  }
  const queries = { ...defaults.queries };
  const watch = { ...defaults.watch };
  if (file.queries !== undefined) {
    if (!isRecord(file.queries)) throw new MappingError('"queries" must be an object of collection: SELECT');
    for (const [name, query] of Object.entries(file.queries)) {
      if (!COLLECTIONS.includes(name as Collection)) {
        throw new MappingError(`queries: unknown collection "${name}" (one of ${COLLECTIONS.join(', ')})`);
      }
      if (typeof query !== 'string' || !/^\s*(SELECT|WITH)\b/i.test(query)) {
        throw new MappingError(
          `queries.${name}: must be a SELECT returning ${COLLECTION_COLUMNS[name as Collection].join(', ')}`,
        );
      }
      queries[name as Collection] = query.trim().replace(/;\s*$/, '');
    }
  }
  if (file.watch !== undefined) {
    if (!isRecord(file.watch)) throw new MappingError('"watch" must be an object of table: watch entry (or null)');
    for (const [table, entry] of Object.entries(file.watch)) {
      if (!IDENTIFIER.test(table)) throw new MappingError(`watch: "${table}" is not a plain table name`);
      if (entry === null) {
        delete watch[table];
        continue;
      }
      watch[table] = checkedWatch(`watch.${table}`, entry);
    }
  }
  return { queries, watch };
}

function checkedWatch(where: string, entry: unknown): Watch {
  if (!isRecord(entry)) throw new MappingError(`${where}: must be an object with "columns" and "touches"`);
  const { key = 'id', columns, touches } = entry;
  if (typeof key !== 'string' || !IDENTIFIER.test(key)) throw new MappingError(`${where}.key: must be a column name`);
  if (
    !Array.isArray(columns) ||
    columns.length === 0 ||
    !columns.every((c) => typeof c === 'string' && IDENTIFIER.test(c))
  ) {
    throw new MappingError(`${where}.columns: must be a list of column names`);
  }
  if (!Array.isArray(touches) || touches.length === 0) throw new MappingError(`${where}.touches: must be a list`);
  return {
    key,
    columns,
    touches: touches.map((touch, i) => {
      if (!isRecord(touch)) throw new MappingError(`${where}.touches[${i}]: must be an object with "part" and "ref"`);
      if (!CHANGE_PARTS.includes(touch.part as ChangePart)) {
        throw new MappingError(`${where}.touches[${i}].part: one of ${CHANGE_PARTS.join(', ')}`);
      }
      if (
        typeof touch.ref !== 'string' ||
        !/^\s*SELECT\b[\s\S]*\bAS\s+ref\b/i.test(touch.ref) ||
        !touch.ref.includes('{row}')
      ) {
        throw new MappingError(
          `${where}.touches[${i}].ref: a SELECT of the ids "AS ref", written over the row as {row}`,
        );
      }
      const on = touch.on ?? ['insert', 'update', 'delete'];
      if (!Array.isArray(on) || !on.every((o) => o === 'insert' || o === 'update' || o === 'delete')) {
        throw new MappingError(`${where}.touches[${i}].on: a list of insert, update, delete`);
      }
      return { part: touch.part as ChangePart, ref: touch.ref, on };
    }),
  };
}
