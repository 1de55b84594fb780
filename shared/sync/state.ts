import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { syncLeaseKey } from '../table/keys.ts';
import type { TableRef } from '../write/writer.ts';

/**
 * Where the sync stands in the source's log (docs/contract.md, section 9): the position up to which
 * everything is served, and which source it is a position of. It travels on the sync's lease item,
 * written with each renewal and left there when the lease is given back (shared/write/lease.ts,
 * `carry`), so keeping it costs no write of its own; the next run, or the next invocation of the
 * deployed sync, streams from there. On PostgreSQL the slot keeps its own position too; on MySQL this
 * is the only one.
 *
 * readLogPosition: the position the last sync of this table left for this source, if any:
 * `log_position`, kept with `log_source`, the source it belongs to (its redacted URL); a position of
 * another source is ignored.
 */
export async function readLogPosition(table: TableRef, source: string): Promise<string | undefined> {
  const { Item } = await table.doc.send(
    new GetCommand({ TableName: table.tableName, Key: syncLeaseKey(), ConsistentRead: true }),
  );
  return Item && Item.log_source === source && typeof Item.log_position === 'string' ? Item.log_position : undefined;
}
