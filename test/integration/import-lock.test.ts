import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { acquireImportLease, LeaseHeld, LeaseLost } from '../../shared/write/lease.ts';
import { importLeaseKey, teamLockKey } from '../../shared/table/keys.ts';
import { LockLost, TeamLocks } from '../../shared/write/team-locks.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';

/**
 * The import's lease (shared/write/lease.ts: one import at a time) and the writers' team locks
 * (shared/write/team-locks.ts: one writer a team), with their leases shortened from 60 s to a second
 * or so: a lock whose holder stopped renewing is taken over when its lease runs out; a live holder's
 * is not, and the second import says who holds it; a holder whose lock was taken over never writes
 * again.
 */
let table: TestTable;
beforeEach(async () => {
  table = await freshTable();
});

const lockItem = async () =>
  (await table.doc.send(new GetCommand({ TableName: table.tableName, Key: importLeaseKey(), ConsistentRead: true })))
    .Item;

describe("the import's lease", () => {
  it('takes over a lock left on another machine once its lease has run out without a renewal', async () => {
    const now = Date.now();
    await table.doc.send(
      new PutCommand({
        TableName: table.tableName,
        Item: {
          ...importLeaseKey(),
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
    const lock = await acquireImportLease(table.doc, table.tableName, {
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
    const holder = await acquireImportLease(table.doc, table.tableName, { leaseMs: 3_000, renewEveryMs: 200 });
    await expect(
      acquireImportLease(table.doc, table.tableName, { leaseMs: 3_000, renewEveryMs: 200 }),
    ).rejects.toBeInstanceOf(LeaseHeld);
    await expect(acquireImportLease(table.doc, table.tableName, { leaseMs: 3_000, renewEveryMs: 200 })).rejects.toThrow(
      /another import is running \(.+, pid \d+, started .+\)/,
    );
    holder.assertHeld();
    await holder.release();
  });

  it('stops a holder whose lock was taken over from writing again', async () => {
    // A lease far longer than the wait: only a renewal that finds the lock taken can stop the holder (however loaded the machine).
    const holder = await acquireImportLease(table.doc, table.tableName, { leaseMs: 60_000, renewEveryMs: 200 });
    // Another import took the lock over (as after a lease that ran out).
    await table.doc.send(
      new PutCommand({
        TableName: table.tableName,
        Item: {
          ...importLeaseKey(),
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
    await vi.waitFor(() => expect(() => holder.assertHeld()).toThrow(LeaseLost), { timeout: 20_000, interval: 100 });
    await holder.release(); // not its lock any more: left alone
    expect((await lockItem())?.lock_owner).toBe('someone-else');
  });
});

describe("a team's writers' lock", () => {
  const teamLock = async (teamId: number) =>
    (
      await table.doc.send(
        new GetCommand({ TableName: table.tableName, Key: teamLockKey(teamId), ConsistentRead: true }),
      )
    ).Item;
  const locksOf = (owner: string, leaseMs = 1_500, renewEveryMs = 300) =>
    new TeamLocks({ doc: table.doc, tableName: table.tableName }, owner, 'import', leaseMs, renewEveryMs);

  it('takes over a lock left on another machine once its lease has run out, and says so', async () => {
    await table.doc.send(
      new PutCommand({
        TableName: table.tableName,
        Item: {
          ...teamLockKey(7),
          owner: 'killed',
          holder: 'sync',
          host: 'another-machine',
          boot_id: 'x',
          pid: 1,
          expires_at: Date.now() + 1_500,
        },
      }),
    );
    const waits: string[] = [];
    const locks = locksOf('next');
    // Taken over: the taker is told, since the dead holder may have left items it never switched to.
    expect(await locks.lock(7, (line) => waits.push(line))).toEqual({ tookOver: true });
    expect(waits).toEqual(['waiting for team 7, which a sync (another-machine, pid 1) is writing']);
    expect((await teamLock(7))?.owner).toBe('next');
    locks.assertHeld(7);
    await locks.releaseAll();
    expect(await teamLock(7)).toBeUndefined();
  });

  it('locks teams, not the table: another team is free while one is held, and a free lock is not a takeover', async () => {
    const first = locksOf('first', 60_000, 200);
    const second = locksOf('second', 60_000, 200);
    expect(await first.lock(1)).toEqual({ tookOver: false });
    expect(await second.lock(2)).toEqual({ tookOver: false });
    // The second writer waits for team 1 while the first holds it, and gets it once it is given back.
    const waits: string[] = [];
    const waiting = second.lock(1, (line) => waits.push(line));
    await vi.waitFor(() => expect(waits).toHaveLength(1), { timeout: 10_000, interval: 50 });
    expect(waits[0]).toMatch(/^waiting for team 1, which an import \(.+, pid \d+\) is writing$/);
    await first.unlock(1);
    expect(await waiting).toEqual({ tookOver: false });
    expect((await teamLock(1))?.owner).toBe('second');
    await Promise.all([first.releaseAll(), second.releaseAll()]);
  });

  it('stops a holder whose lock was taken over from writing that team again', async () => {
    const holder = locksOf('holder', 60_000, 200);
    await holder.lock(3);
    await holder.lock(4);
    await table.doc.send(
      new PutCommand({
        TableName: table.tableName,
        Item: {
          ...teamLockKey(3),
          owner: 'someone-else',
          holder: 'sync',
          host: 'h',
          boot_id: '',
          pid: 2,
          expires_at: Date.now() + 60_000,
        },
      }),
    );
    await vi.waitFor(() => expect(() => holder.assertHeld(3)).toThrow(LockLost), { timeout: 20_000, interval: 100 });
    holder.assertHeld(4);
    await holder.releaseAll(); // team 3's lock is not its own any more: left alone
    expect((await teamLock(3))?.owner).toBe('someone-else');
    expect(await teamLock(4)).toBeUndefined();
  });
});
