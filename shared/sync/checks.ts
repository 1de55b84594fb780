import { COLLECTION_COLUMNS, COLLECTIONS, type Collection, type Mapping, type SourceShape } from './mapping.ts';
import type { Row, SourceConnection } from './source/connection.ts';

/**
 * What the sync checks of the source before it reads (docs/contract.md, section 9: schema first):
 * the tables and columns the mapping names, each collection's query run and its columns' types judged
 * on a sample of rows (a query written for another engine runs, but returns numbers where text was
 * meant), and what the default mapping adapts to (Jetstream's teams without a slug).
 */

const schemaOf = (source: SourceConnection) => (source.engine === 'postgres' ? 'current_schema()' : 'DATABASE()');

/** The columns of each table of the source's schema. */
async function columnsByTable(source: SourceConnection): Promise<Map<string, Set<string>>> {
  const present = new Map<string, Set<string>>();
  for (const row of await source.query(
    `SELECT table_name AS table_name, column_name AS column_name FROM information_schema.columns
     WHERE table_schema = ${schemaOf(source)}`,
  )) {
    const table = String(row.table_name);
    if (!present.has(table)) present.set(table, new Set());
    present.get(table)!.add(String(row.column_name));
  }
  return present;
}

/** Whether the source's teams have a slug (Jetstream's stock schema has none). */
export async function sourceShape(source: SourceConnection): Promise<SourceShape> {
  const teams = (await columnsByTable(source)).get('teams');
  return { teamsHaveSlug: teams?.has('slug') ?? true };
}

/**
 * What the source lacks for the mapping, named whole: every missing table and column of the tables
 * the log reports, then every collection query that does not run or whose sample of rows holds a
 * column of the wrong kind. Empty when nothing is missing.
 */
export async function missingSchema(source: SourceConnection, mapping: Mapping): Promise<string[]> {
  const present = await columnsByTable(source);
  const missing: string[] = [];
  for (const [table, watch] of Object.entries(mapping.watch)) {
    const has = present.get(table);
    if (!has) missing.push(`table ${table}`);
    else {
      const absent = watch.columns.filter((column) => !has.has(column));
      if (absent.length > 0) missing.push(`${table}.${absent.join(`, ${table}.`)}`);
    }
  }
  if (missing.length > 0) return missing;
  for (const collection of COLLECTIONS) {
    const columns = COLLECTION_COLUMNS[collection].map((c) => `q.${c}`).join(', ');
    let sample: Row[];
    try {
      sample = await source.query(`SELECT ${columns} FROM (${mapping.queries[collection]}) q LIMIT 20`);
    } catch (error) {
      missing.push(`the ${collection} query does not run (${(error as Error).message})`);
      continue;
    }
    const wrong = wrongKinds(collection, sample);
    if (wrong.length > 0) missing.push(`the ${collection} query returns ${wrong.join(', ')}`);
  }
  return missing;
}

/** What each column of a collection must hold: an integer id (`id`, `<x>_id`), a number (an amount), or text. */
const kindOf = (column: string) =>
  /(^|_)id$/.test(column) ? 'id' : ['processes', 'monthly_cost', 'amount'].includes(column) ? 'number' : 'text';

/** The columns of a sample whose values are not of their kind (named once each). */
function wrongKinds(collection: Collection, sample: Row[]): string[] {
  const wrong = new Set<string>();
  for (const row of sample) {
    for (const column of COLLECTION_COLUMNS[collection]) {
      const value = row[column];
      if (value === null || value === undefined) continue;
      const kind = kindOf(column);
      const text = String(value);
      const fits =
        kind === 'id'
          ? /^\d+$/.test(text)
          : kind === 'number'
            ? /^-?\d+(\.\d+)?$/.test(text)
            : typeof value === 'string' || (column === 'abilities' && typeof value === 'object');
      if (!fits)
        wrong.add(`${column} as ${kind === 'text' ? 'no text' : `no ${kind === 'id' ? 'integer' : 'number'}`}`);
    }
  }
  return [...wrong];
}
