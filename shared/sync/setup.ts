import {
  CHANGES_TABLE,
  missingPrivileges,
  missingSchema,
  preparedFor,
  removeStatements,
  SETUP_TABLE,
  setupStatements,
} from './capture.ts';
import type { Mapping } from './mapping.ts';
import type { SourceConnection } from './source.ts';
import { SyncRefused } from './sync.ts';

/**
 * `npm run sync -- setup`: the source checked (schema first, then the role's privileges and the
 * server's settings, each missing thing named in one line), then prepared for the change capture
 * (capture.ts): the change table, one trigger per event on each watched table, and the setup's
 * record. Idempotent: run again, it installs the same again. On PostgreSQL all of it is one
 * transaction (its DDL is transactional); on MySQL each statement stands alone, and a setup
 * stopped half-way is completed by running it again.
 *
 * PostgreSQL makes no index for a foreign key: the sync reads a team's rows by `team_id`, so
 * setup adds the indexes the default mapping's reads use where the tables have none (MySQL's
 * InnoDB indexes every foreign key already).
 */
const POSTGRES_INDEXES: [table: string, column: string][] = [
  ['projects', 'team_id'],
  ['environments', 'team_id'],
  ['servers', 'team_id'],
  ['clients', 'team_id'],
  ['costs', 'team_id'],
  ['daemons', 'environment_id'],
  ['daemons', 'server_id'],
  ['team_user', 'user_id'],
];

/** Checks and prepares the source; returns the lines that say what it did. */
export async function setUpSource(source: SourceConnection, mapping: Mapping, redacted: string): Promise<string[]> {
  const schema = await missingSchema(source, mapping);
  if (schema.length > 0) throw new SyncRefused(`the source (${redacted}) lacks ${schema.join('; ')}`);
  const privileges = await missingPrivileges(source, mapping);
  if (privileges.length > 0) {
    throw new SyncRefused(`the source's role cannot set up the sync (${redacted}): it lacks ${privileges.join('; ')}`);
  }
  const before = await preparedFor(source, mapping);
  const tables = Object.keys(mapping.watch);
  const statements = setupStatements(source.engine, mapping);
  const indexes = source.engine === 'postgres' ? await missingIndexes(source) : [];
  if (source.engine === 'postgres') await source.query('BEGIN');
  try {
    for (const statement of statements) await source.query(statement);
    for (const [table, column] of indexes) {
      await source.query(`CREATE INDEX IF NOT EXISTS team_resources_${table}_${column} ON ${table} (${column})`);
    }
    if (source.engine === 'postgres') await source.query('COMMIT');
  } catch (error) {
    if (source.engine === 'postgres') await source.query('ROLLBACK').catch(() => {});
    throw error;
  }
  return [
    before === 'prepared'
      ? `the source (${redacted}) was prepared already: its triggers are installed again, unchanged`
      : `prepared the source (${redacted}) for the sync:`,
    `  the change table ${CHANGES_TABLE} and the setup record ${SETUP_TABLE}`,
    `  triggers on ${tables.length} tables: ${tables.join(', ')}`,
    ...(indexes.length > 0 ? [`  indexes on ${indexes.map(([t, c]) => `${t}.${c}`).join(', ')}`] : []),
    `remove them with: npm run sync -- remove --source <url>`,
  ];
}

/** The default mapping's indexes that the source's tables lack (a table it does not have is not asked for). */
async function missingIndexes(source: SourceConnection): Promise<[string, string][]> {
  const indexed = new Set(
    (
      await source.query<{ tablename: string; indexdef: string }>(
        'SELECT tablename AS tablename, indexdef AS indexdef FROM pg_indexes WHERE schemaname = current_schema()',
      )
    ).flatMap((row) => {
      // The index's first column: "… ON public.projects USING btree (team_id, …)".
      const first = /\(([^,)]+)/.exec(String(row.indexdef))?.[1]?.replaceAll('"', '').trim();
      return first ? [`${row.tablename}.${first}`] : [];
    }),
  );
  const tables = new Set(
    (
      await source.query<{ name: string }>(
        'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()',
      )
    ).map((row) => String(row.name)),
  );
  return POSTGRES_INDEXES.filter(([table, column]) => tables.has(table) && !indexed.has(`${table}.${column}`));
}

/** `npm run sync -- remove`: the triggers, their functions, the change table and the setup record go. */
export async function removeSetup(source: SourceConnection, mapping: Mapping, redacted: string): Promise<string[]> {
  const tables = Object.keys(mapping.watch);
  for (const statement of removeStatements(source.engine, tables)) await source.query(statement);
  return [
    `removed the sync's change capture from the source (${redacted}): its triggers, ${CHANGES_TABLE}, ${SETUP_TABLE}`,
  ];
}
