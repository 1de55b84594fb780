import { missingSchema, sourceShape } from './checks.ts';
import { PUBLICATION, slotName } from './log/reader.ts';
import { type Mapping, type SourceShape, tablesNeedingOldRows, watchedTables } from './mapping.ts';
import { sourceRefusal, SyncRefused } from './run.ts';
import { connectSource, type SourceConnection } from './source/connection.ts';
import { sourceFault } from './source/faults.ts';
import type { SourceUrl } from './source/url.ts';

/**
 * `npm run sync -- setup` and `remove` (docs/sync.md, "Setup"): the source checked (schema first, then
 * the role's privileges and the server's settings, each missing thing named in one line), then made
 * ready for reading its log. Nothing goes into the app's schema or transactions: on PostgreSQL a
 * publication of the tables the sync reads, and REPLICA IDENTITY FULL on those whose old row the sync
 * needs (log/postgres-setup.ts); on MySQL/MariaDB nothing at all (log/mysql-setup.ts checks the binary
 * log's settings). Either removes what an earlier, trigger-based version installed, and says so.
 * Every lock is taken with a short timeout and tried again, saying what it waits for: setup never
 * queues the app behind a long transaction, and never leaves a step half done.
 */
interface SetupOptions {
  say: (line: string) => void;
  /** The table the sync keeps (its slot is named after it), for remove. */
  tableName?: string;
}

async function connected<T>(source: SourceUrl, work: (connection: SourceConnection) => Promise<T>): Promise<T> {
  const connection = await connectSource(source).catch((error) => {
    if (sourceFault(error) === 'unreachable') {
      throw new SyncRefused(`the source does not answer (${source.redacted}: ${(error as Error).message})`);
    }
    throw sourceRefusal(error, source);
  });
  try {
    return await work(connection);
  } finally {
    await connection.close();
  }
}

/** Checks and prepares the source; returns the lines that say what it did. */
export async function setUpSource(
  source: SourceUrl,
  mappingFor: (shape: SourceShape) => Mapping,
  { say }: SetupOptions,
): Promise<string[]> {
  return connected(source, async (connection) => {
    const shape = await sourceShape(connection);
    const mapping = mappingFor(shape);
    const schema = await missingSchema(connection, mapping);
    if (schema.length > 0) throw new SyncRefused(`the source (${source.redacted}) lacks ${schema.join('; ')}`);
    const tables = watchedTables(mapping);
    const found = shape.teamsHaveSlug
      ? 'teams have a slug: the API answers a team by its id and by its slug'
      : "teams have no slug (Jetstream's stock schema): the API answers each team by its id alone";
    if (connection.engine === 'postgres') {
      const { postgresRequirements, preparePostgres } = await import('./log/postgres-setup.ts');
      const missing = await postgresRequirements(connection, { tables, role: 'setup' });
      if (missing.length > 0) {
        throw new SyncRefused(
          `the source's role cannot set up the sync (${source.redacted}): it lacks ${missing.join('; ')}`,
        );
      }
      const lines = await preparePostgres(connection, {
        tables,
        fullIdentity: tablesNeedingOldRows(mapping),
        publication: PUBLICATION,
        onWait: say,
      }).catch(gaveUp(source));
      return [
        `set up the source (${source.redacted}) for the sync:`,
        ...lines.map((line) => `  ${line}`),
        `  ${found}`,
      ];
    }
    const { mysqlRequirements, removeMysqlLegacy } = await import('./log/mysql-setup.ts');
    const missing = await mysqlRequirements(connection, { tables, role: 'setup' });
    const removed = await removeMysqlLegacy(connection, { tables, onWait: say }).catch(gaveUp(source));
    if (missing.length > 0) {
      throw new SyncRefused(
        `the source is not ready for the sync (${source.redacted}): it lacks ${missing.join('; ')}`,
      );
    }
    return [
      `the source (${source.redacted}) is ready for the sync: ` +
        'its binary log is read as a replica reads it; nothing was installed',
      ...removed.map((line) => `  ${line}`),
      `  ${found}`,
    ];
  });
}

/** Removes what setup made (and what an earlier version installed); returns the lines that say what it did. */
export async function removeSetup(
  source: SourceUrl,
  mappingFor: (shape: SourceShape) => Mapping,
  { say, tableName = process.env.TABLE_NAME?.trim() || 'team-resources' }: SetupOptions,
): Promise<string[]> {
  return connected(source, async (connection) => {
    const mapping = mappingFor(await sourceShape(connection));
    const tables = watchedTables(mapping);
    if (connection.engine === 'postgres') {
      const { removePostgres } = await import('./log/postgres-setup.ts');
      const lines = await removePostgres(connection, {
        tables,
        publication: PUBLICATION,
        slot: slotName(tableName),
        onWait: say,
      }).catch(gaveUp(source));
      return [
        `removed the sync's publication and slot from the source (${source.redacted}):`,
        ...lines.map((line) => `  ${line}`),
      ];
    }
    const { removeMysqlLegacy } = await import('./log/mysql-setup.ts');
    const lines = await removeMysqlLegacy(connection, { tables, onWait: say }).catch(gaveUp(source));
    return [
      `nothing of the sync is in the source (${source.redacted}): its binary log is read as it is`,
      ...lines.map((line) => `  ${line}`),
    ];
  });
}

/** A step that gave up on a lock (the app holds it in a long transaction): said in one line, with what was done. */
const gaveUp = (source: SourceUrl) => (error: unknown) => {
  if (error instanceof Error && error.name === 'SetupGaveUp') {
    const done = (error as Error & { done?: string[] }).done ?? [];
    throw new SyncRefused(
      `${error.message} (${source.redacted})${done.length > 0 ? `; done before it: ${done.join('; ')}` : ''}`,
    );
  }
  throw error;
};
