import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { DeleteCommand, GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { importLockKey } from '../../shared/store/keys.ts';

/**
 * The table's one import lock: two imports never run at once, so they can never interleave within
 * a team. The holder keeps a lease (60 s) and renews it every 15 s while it runs.
 *
 * A second import does not queue behind a live one: it watches the lock for up to one lease. If
 * the holder renews meanwhile it is alive, and the second import fails with a message naming it.
 * If the lease runs out without a renewal (the holder was killed, or lost its machine), the second
 * import takes the lock over: within 60 s of the killed import's last renewal. A holder on this
 * very machine whose process is gone is known dead at once, and its lock is taken over at once.
 *
 * The holder stops writing before its lease can have run out (`assertHeld`, before every batch and
 * transaction, by its own monotonic clock), and every switch transaction checks the lock is still
 * its own: an import that was paused past its lease never writes again.
 */
const LEASE_MS = 60_000;
const RENEW_EVERY_MS = 15_000;
const POLL_MS = 1_000;

export interface LockOptions {
  leaseMs?: number;
  renewEveryMs?: number;
  /** Told once when the import has to wait for another one's lock. */
  onWait?: (message: string) => void;
}

/** Another import is running: its lock is alive. */
export class LockHeld extends Error {
  constructor(holder: LockItem) {
    super(
      `another import is running (${holder.host}, pid ${holder.pid}, started ${new Date(holder.started_at).toISOString()}); ` +
        'it renews its lock, so it is alive: run this import again when that one has finished',
    );
    this.name = 'LockHeld';
  }
}

/** This import lost its lock (it was paused past its lease and another import took over). */
export class LockLost extends Error {
  constructor() {
    super(
      'this import lost its lock (it could not renew it for too long, and another import may have taken over); nothing more was written: run it again',
    );
    this.name = 'LockLost';
  }
}

interface LockItem {
  lock_owner: string;
  host: string;
  boot_id: string;
  pid: number;
  started_at: number;
  renewed_at: number;
  expires_at: number;
}

/** This machine's boot id (Linux), so a pid is only judged on the machine and boot it belongs to. */
const BOOT_ID = (() => {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return '';
  }
})();

/** The lock this import holds: what pass 2 checks before it writes, and gives back at the end. */
export type ImportLock = Awaited<ReturnType<typeof acquireImportLock>>;

/** Takes the lock: at once when free, expired or left by a dead process here; else as the module comment says. */
export async function acquireImportLock(
  doc: DynamoDBDocumentClient,
  tableName: string,
  { leaseMs = LEASE_MS, renewEveryMs = RENEW_EVERY_MS, onWait }: LockOptions = {},
) {
  const owner = randomBytes(12).toString('hex');
  /** The lock's key, on condition that this import holds it. */
  const ifStillOurs = () => ({
    TableName: tableName,
    Key: importLockKey(),
    ConditionExpression: 'lock_owner = :me',
    ExpressionAttributeValues: { ':me': owner },
  });
  let renewedAt = performance.now();
  /** The lock as this import last wrote it. */
  let held: LockItem | undefined;
  let lost = false;

  /** Sends a conditional write; false when its condition failed. */
  const ifOurs = async (command: PutCommand | DeleteCommand) => {
    try {
      await doc.send(command as PutCommand);
      return true;
    } catch (error) {
      if ((error as Error).name === 'ConditionalCheckFailedException') return false;
      throw error;
    }
  };

  /** Writes the lock as ours, if it is still as we saw it (free, the same stale lease, or ours as we last wrote it). */
  const write = async (seen: LockItem | undefined) => {
    const sent = performance.now();
    const now = Date.now();
    const item: LockItem = {
      lock_owner: owner,
      host: hostname(),
      boot_id: BOOT_ID,
      pid: process.pid,
      started_at: held?.started_at ?? now,
      renewed_at: now,
      expires_at: now + leaseMs,
    };
    const written = await ifOurs(
      new PutCommand({
        TableName: tableName,
        Item: { ...importLockKey(), ...item },
        // Our own lease is renewed whatever renewal last reached the table (one whose answer was lost, too).
        ConditionExpression: !seen
          ? 'attribute_not_exists(pk)'
          : seen === held
            ? 'lock_owner = :owner'
            : 'lock_owner = :owner AND renewed_at = :renewed',
        ExpressionAttributeValues: seen && {
          ':owner': seen.lock_owner,
          ...(seen !== held && { ':renewed': seen.renewed_at }),
        },
      }),
    );
    if (written) [renewedAt, held] = [sent, item];
    return written;
  };

  let firstSeen: LockItem | undefined;
  for (;;) {
    const current = (
      await doc.send(new GetCommand({ TableName: tableName, Key: importLockKey(), ConsistentRead: true }))
    ).Item as LockItem | undefined;
    if (!current || current.expires_at <= Date.now() || isDeadHere(current)) {
      if (await write(current)) break;
      continue; // someone else was faster: look again
    }
    if (firstSeen?.lock_owner !== current.lock_owner) {
      firstSeen = current;
      onWait?.(
        `waiting for the lock of another import (${current.host}, pid ${current.pid}): taken over if it is not renewed within ${Math.ceil((current.expires_at - Date.now()) / 1000)} s`,
      );
    } else if (current.renewed_at !== firstSeen.renewed_at) {
      throw new LockHeld(current);
    }
    await sleep(Math.min(POLL_MS, Math.max(current.expires_at - Date.now(), 10)));
  }
  const timer = setInterval(async () => {
    try {
      // Taken over: never write again.
      lost = !(await write(held));
    } catch {
      // Any other failure: the next renewal tries again, and assertHeld stops the writes if none succeeds in time.
    }
  }, renewEveryMs).unref();

  return {
    owner,
    /** Throws unless the lease is certainly still this import's: it stops a renewal interval before anyone may take over. */
    assertHeld(): void {
      if (lost || performance.now() - renewedAt > leaseMs - renewEveryMs) throw new LockLost();
    },
    /** A transaction action that fails the transaction unless the lock is still this import's. */
    conditionCheck: () => ({ ConditionCheck: ifStillOurs() }),
    async release(): Promise<void> {
      clearInterval(timer);
      await ifOurs(new DeleteCommand(ifStillOurs()));
    },
  };
}

/** A lock held by a process of this machine (same host and boot) that no longer exists. */
function isDeadHere(held: LockItem): boolean {
  if (!held.boot_id || held.boot_id !== BOOT_ID || held.host !== hostname() || held.pid === process.pid) return false;
  try {
    process.kill(held.pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
