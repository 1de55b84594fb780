import type { SourceEngine } from './source/url.ts';

/**
 * How the sync reads the source (docs/contract.md, section 9; docs/sync.md, "The mapping"): a query
 * per collection, and for each table the log reports, what a changed row touches. The default is
 * Laravel's conventions (Jetstream's teams, Sanctum's tokens); a mapping file replaces any query and
 * any table's entry, and the rest stays the default.
 *
 * A collection's query may be any SELECT that returns its columns by these names; the sync reads it as
 * a derived table (`SELECT … FROM (<query>) q WHERE …`), so a query needs no filter of its own. A
 * table's entry names the columns whose change matters (an UPDATE that changes none of them is no
 * change: Sanctum's `last_used_at`) and what a changed row touches: a part of a team (by a column of
 * the row that holds the team's id, or a SELECT of it over the row, `{row.<column>}` standing for the
 * row's values), and for a list the column that holds the item's id, so that only that item is read
 * again; or a user or a token, by the column that holds its id.
 */

/** What a change touches: a part of a team, a user, a token. */
const CHANGE_PARTS = ['team', 'members', 'projects', 'daemons', 'finance', 'user', 'token'] as const;
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

/**
 * The columns each collection's query returns. The tokens query may also return `created_at`
 * (Sanctum's: `token list` shows it); Laravel's does.
 */
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
  /** For a part of a team: a column of the row holding the team's id, or a SELECT of it (`AS team_id`). */
  team?: string;
  /** For projects or daemons: the column holding the item's id (only that item is read again). */
  item?: string;
  /** For a user or a token: the column holding its id. */
  id?: string;
  /** The changes it is taken from (default: all three). */
  on?: readonly ('insert' | 'update' | 'delete')[];
}

interface Watch {
  /** The columns whose change is a change; an UPDATE that changes none of them is none. */
  columns: readonly string[];
  touches: readonly Touch[];
}

export interface Mapping {
  queries: Record<Collection, string>;
  watch: Record<string, Watch>;
}

/** What the source's tables have that the default mapping depends on (found by setup and the sync). */
export interface SourceShape {
  /** Jetstream's stock `teams` has no slug: such a team is addressed by its id alone. */
  teamsHaveSlug: boolean;
}

/** A collection's query where its table has its columns by their names. */
const select = (table: Collection) => `SELECT ${COLLECTION_COLUMNS[table].join(', ')} FROM ${table}`;
/** A table's entry whose columns are its collection's. */
const watched = (table: Collection, touches: Touch[]): Watch => ({ columns: COLLECTION_COLUMNS[table], touches });
const byTeam = (part: ChangePart, item?: string): Touch => ({ part, team: 'team_id', ...(item && { item }) });

/**
 * Laravel's conventions. Sanctum's tokens belong to a model by `tokenable_type`; only users' count.
 * The class name holds backslashes, which MySQL reads in a literal as escapes or not, by the server's
 * sql_mode (NO_BACKSLASH_ESCAPES), so there it is written as a hex literal with a character set
 * introducer: a plain literal still, which takes the column's collation
 * (https://dev.mysql.com/doc/refman/8.0/en/charset-introducer.html).
 */
export function defaultMapping(engine: SourceEngine, shape: SourceShape = { teamsHaveSlug: true }): Mapping {
  const userModel =
    engine === 'postgres'
      ? String.raw`'App\Models\User'`
      : `_utf8mb4 X'${Buffer.from(String.raw`App\Models\User`).toString('hex')}'`;
  const slug = shape.teamsHaveSlug ? 'slug' : 'NULL AS slug';
  return {
    queries: {
      ...(Object.fromEntries(COLLECTIONS.map((c) => [c, select(c)])) as Record<Collection, string>),
      teams: `SELECT id, ${slug}, name, user_id FROM teams`,
      tokens:
        'SELECT id, tokenable_id AS user_id, name, token, abilities, expires_at, created_at ' +
        `FROM personal_access_tokens WHERE tokenable_type = ${userModel}`,
    },
    watch: {
      teams: {
        columns: ['id', ...(shape.teamsHaveSlug ? ['slug'] : []), 'name', 'user_id'],
        touches: [{ part: 'team', team: 'id' }],
      },
      users: watched('users', [{ part: 'user', id: 'id' }]),
      team_user: watched('team_user', [byTeam('members')]),
      personal_access_tokens: {
        // Not last_used_at, nor the updated_at that Sanctum's save writes with it.
        columns: ['id', 'tokenable_type', 'tokenable_id', 'name', 'token', 'abilities', 'expires_at', 'created_at'],
        touches: [{ part: 'token', id: 'id' }],
      },
      environments: watched('environments', [byTeam('daemons')]),
      servers: watched('servers', [
        byTeam('finance'),
        // A server's daemons go with it (ON DELETE CASCADE), which MySQL's binary log does not
        // record: its team's daemons are read again. A daemon of another team that named it is found
        // by the SELECT below while it is there, or by the next full pass.
        { ...byTeam('daemons'), on: ['delete'] },
        // A daemon names a server of any team: the daemons of whatever teams name it.
        {
          part: 'daemons',
          on: ['insert', 'delete'],
          team:
            'SELECT e.team_id FROM daemons d JOIN environments e ON e.id = d.environment_id ' +
            'WHERE d.server_id = {row.id}',
        },
      ]),
      // A client gone takes its projects' client_id with it (ON DELETE SET NULL): the whole list.
      clients: watched('clients', [byTeam('projects')]),
      projects: watched('projects', [byTeam('projects', 'id')]),
      daemons: watched('daemons', [
        { part: 'daemons', team: 'SELECT e.team_id FROM environments e WHERE e.id = {row.environment_id}', item: 'id' },
      ]),
      costs: watched('costs', [byTeam('finance')]),
    },
  };
}

/** The mapping for a source's shape: Laravel's, with a mapping file's replacements where one is given. */
export const mappingFor = (engine: SourceEngine, file?: unknown) => (shape: SourceShape) =>
  file === undefined ? defaultMapping(engine, shape) : withMappingFile(defaultMapping(engine, shape), file);

/** The tables the log must report: the mapping's watched tables (the publication's, on PostgreSQL). */
export const watchedTables = (mapping: Mapping) => Object.keys(mapping.watch).sort();

/**
 * The tables whose old row the sync needs on PostgreSQL: those a change reaches through a column
 * other than the key.
 */
export function tablesNeedingOldRows(mapping: Mapping): string[] {
  return watchedTables(mapping).filter((table) =>
    mapping.watch[table]!.touches.some((touch) => {
      const columns = [touch.team, touch.item, touch.id].flatMap((c) => (c && !/\s/.test(c) ? [c] : []));
      const inSelect = [...(touch.team?.matchAll(/\{row\.([A-Za-z_][A-Za-z0-9_]*)\}/g) ?? [])].map((m) => m[1]!);
      return [...columns, ...inSelect].some((column) => column !== 'id');
    }),
  );
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
/** A plain SQL name: a table or a column. */
export const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const LIST_PARTS: readonly ChangePart[] = ['projects', 'daemons'];
const TEAM_PARTS: readonly ChangePart[] = ['team', 'members', 'projects', 'daemons', 'finance'];

/**
 * The default mapping with a mapping file's replacements: `{"queries": {<collection>: <SELECT>},
 * "watch": {<table>: <entry> | null}}` (null stops watching a table). Checked whole; the first problem
 * is named by its key.
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
    if (!isRecord(file.watch)) throw new MappingError('"watch" must be an object of table: entry (or null)');
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
  const { columns, touches } = entry;
  for (const key of Object.keys(entry)) {
    if (key !== 'columns' && key !== 'touches') throw new MappingError(`${where}: unknown key "${key}"`);
  }
  if (
    !Array.isArray(columns) ||
    columns.length === 0 ||
    !columns.every((c) => typeof c === 'string' && IDENTIFIER.test(c))
  ) {
    throw new MappingError(`${where}.columns: must be a list of column names`);
  }
  if (!Array.isArray(touches) || touches.length === 0) throw new MappingError(`${where}.touches: must be a list`);
  return { columns, touches: touches.map((touch, i) => checkedTouch(`${where}.touches[${i}]`, touch)) };
}

function checkedTouch(where: string, touch: unknown): Touch {
  if (!isRecord(touch)) throw new MappingError(`${where}: must be an object with "part" and "team" or "id"`);
  const part = touch.part as ChangePart;
  if (!CHANGE_PARTS.includes(part)) throw new MappingError(`${where}.part: one of ${CHANGE_PARTS.join(', ')}`);
  const column = (key: string) => {
    const value = touch[key];
    if (value !== undefined && (typeof value !== 'string' || !IDENTIFIER.test(value)))
      throw new MappingError(`${where}.${key}: must be a column name`);
    return value as string | undefined;
  };
  const on = touch.on ?? ['insert', 'update', 'delete'];
  if (!Array.isArray(on) || !on.every((o) => o === 'insert' || o === 'update' || o === 'delete')) {
    throw new MappingError(`${where}.on: a list of insert, update, delete`);
  }
  if (!TEAM_PARTS.includes(part)) {
    const id = column('id');
    if (!id) throw new MappingError(`${where}.id: the column holding the ${part}'s id`);
    return { part, id, on };
  }
  const team = touch.team;
  const isSelect = typeof team === 'string' && /^\s*SELECT\b/i.test(team) && team.includes('{row.');
  if (!isSelect && (typeof team !== 'string' || !IDENTIFIER.test(team))) {
    throw new MappingError(`${where}.team: a column holding the team's id, or a SELECT of it over {row.<column>}`);
  }
  const item = column('item');
  if (item && !LIST_PARTS.includes(part)) throw new MappingError(`${where}.item: only for projects or daemons`);
  return { part, team, ...(item && { item }), on };
}
