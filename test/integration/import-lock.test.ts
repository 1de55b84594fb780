import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { acquireWriterLock, LeaseHeld, type LeaseOptions, LockLost } from '../../shared/write/lease.ts';
import { importLockKey } from '../../shared/table/keys.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';

const acquireImportLock = (doc: TestTable['doc'], tableName: string, options: LeaseOptions) =>
  acquireWriterLock(doc, tableName, 'import', options);

/**
 * The writers' lock (shared/write/lease.ts), with its lease shortened from 60 s to a second or so:
 * a lock whose holder stopped renewing is taken over when its lease runs out; a live holder's is
 * not, and the second import says who holds it.
 */
let table: TestTable;
beforeEach(async () => {
  table = await freshTable();
});

const lockItem = async () =>
  (await table.doc.send(new GetCommand({ TableName: table.tableName, Key: importLockKey(), ConsistentRead: true })))
    .Item;

describe('the import lock', () => {
  it('takes over a lock left on another machine once its lease has run out without a renewal', async () => {
    const now = Date.now();
    await table.doc.send(
      new PutCommand({
        TableName: table.tableName,
        Item: {
          ...importLockKey(),
          lock_owner: 'killed',
          host: 'another-machine',
          boot_id: 'x',
          pid: 1,
          started_at: now,
          renewed_at: now,
          expires_at: now + 1_500,
        },
      }),
    );
    const waits: string[] = [];
    const lock = await acquireImportLock(table.doc, table.tableName, {
      leaseMs: 1_500,
      renewEveryMs: 300,
      onWait: (line) => waits.push(line),
    });
    expect(waits).toEqual([expect.stringContaining('waiting for the lock of another import (another-machine, pid 1)')]);
    expect((await lockItem())?.lock_owner).toBe(lock.owner);
    await lock.release();
    expect(await lockItem()).toBeUndefined();
  });

  it('refuses to take a lock whose holder renews it, naming the holder', async () => {
    const holder = await acquireImportLock(table.doc, table.tableName, { leaseMs: 3_000, renewEveryMs: 200 });
    await expect(
      acquireImportLock(table.doc, table.tableName, { leaseMs: 3_000, renewEveryMs: 200 }),
    ).rejects.toBeInstanceOf(LeaseHeld);
    await expect(acquireImportLock(table.doc, table.tableName, { leaseMs: 3_000, renewEveryMs: 200 })).rejects.toThrow(
      /another import is running \(.+, pid \d+, started .+\)/,
    );
    holder.assertHeld();
    await holder.release();
  });

  it('stops a holder whose lock was taken over from writing again', async () => {
    // A lease far longer than the wait: only a renewal that finds the lock taken can stop the holder (however loaded the machine).
    const holder = await acquireImportLock(table.doc, table.tableName, { leaseMs: 60_000, renewEveryMs: 200 });
    // Another import took the lock over (as after a lease that ran out).
    await table.doc.send(
      new PutCommand({
        TableName: table.tableName,
        Item: {
          ...importLockKey(),
          lock_owner: 'someone-else',
          host: 'h',
          boot_id: '',
          pid: 2,
          started_at: 0,
          renewed_at: 0,
          expires_at: Date.now() + 60_000,
        },
      }),
    );
    await vi.waitFor(() => expect(() => holder.assertHeld()).toThrow(LockLost), { timeout: 20_000, interval: 100 });
    await holder.release(); // not its lock any more: left alone
    expect((await lockItem())?.lock_owner).toBe('someone-else');
  });
});
