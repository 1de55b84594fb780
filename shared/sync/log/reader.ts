import { createHash } from 'node:crypto';
import { type Mapping, tablesNeedingOldRows, watchedTables } from '../mapping.ts';
import type { SourceConnection } from '../source/connection.ts';
import type { SyncSettings } from '../settings.ts';
import type { SourceUrl } from '../source/url.ts';
import type { ChangeSource, LogIntervals } from './change-source.ts';

/**
 * The engine's reader of the source's log, for a sync of one table: on PostgreSQL a replication slot of
 * its own (named after the table, so that two stacks reading one database never share one) on the
 * publication setup made (postgres.ts); on MySQL/MariaDB the binary log, read as a replica with a
 * server id of its own, drawn from the table's name, far above the small ids real replicas use
 * (mysql.ts).
 */
export interface LogReader {
  changeSource(): Promise<ChangeSource>;
  /** What keeps the sync's role from reading the log as setup left it, one phrase each (empty: ready). */
  notReady(connection: SourceConnection): Promise<string[]>;
}

/** The publication setup makes on PostgreSQL: one for every sync of the database. */
export const PUBLICATION = 'team_resources_sync';

/** A slot name PostgreSQL takes (lower-case letters, digits and underscores, at most 63) for a table. */
export function slotName(tableName: string): string {
  const digest = createHash('sha256').update(tableName).digest('hex').slice(0, 8);
  const readable = tableName
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 40);
  return `team_resources_${readable}_${digest}`;
}

/** A replica server id for a table: from 2^24 up, out of the way of hand-numbered replicas. */
export function replicaServerId(tableName: string): number {
  return 0x1000000 + (createHash('sha256').update(tableName).digest().readUInt32BE(0) % 0x7f000000);
}

/** The reader a sync reads with: the one its settings give (a test's), else its engine's, at their intervals. */
export const syncLogReader = (settings: SyncSettings, mapping: Mapping): LogReader =>
  settings.log ?? logReader(settings.source, mapping, settings.table.tableName, settings.logIntervals);

function logReader(source: SourceUrl, mapping: Mapping, tableName: string, intervals?: LogIntervals): LogReader {
  const tables = watchedTables(mapping);
  if (source.engine === 'postgres') {
    const slot = slotName(tableName);
    return {
      changeSource: async () =>
        (await import('./postgres.ts')).postgresChangeSource({
          url: source.url,
          slot,
          publication: PUBLICATION,
          intervals,
        }),
      notReady: async (connection) => {
        const { postgresRequirements, postgresPrepared } = await import('./postgres-setup.ts');
        return [
          ...(await postgresRequirements(connection, { tables, role: 'sync', slot })),
          ...(await postgresPrepared(connection, {
            tables,
            fullIdentity: tablesNeedingOldRows(mapping),
            publication: PUBLICATION,
          })),
        ];
      },
    };
  }
  return {
    changeSource: async () =>
      (await import('./mysql.ts')).mysqlChangeSource({
        url: source.url,
        tables,
        serverId: replicaServerId(tableName),
        intervals,
      }),
    notReady: async (connection) =>
      (await import('./mysql-setup.ts')).mysqlRequirements(connection, { tables, role: 'sync' }),
  };
}
