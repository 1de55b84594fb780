import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { DeleteCommand, GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { importLeaseKey, type Key, syncLeaseKey } from '../table/keys.ts';
import { conditionally } from './writer.ts';

/**
 * Leases on one item of the table, with the same discipline for both uses:
 *
 * - the import's lease (IMPORT/LEASE): held by the one import that runs against the table, so a
 *   second one waits or fails with a message naming the first (docs/contract.md, section 7); the
 *   teams an import writes are each under their own lock (team-locks.ts), which a sync takes too;
 * - the sync's lease (SYNC/LEASE): held by the one sync that runs against the table for as long as
 *   it runs, so a second sync waits or exits with a message naming the first.
 *
 * A lease's owner names what its holder leaves in the ledger (ledger.ts): while the lease is held,
 * its pending generations are its writer's, not a dead writer's.
 *
 * The holder keeps a lease (60 s) and renews it every 15 s while it runs. Someone else who wants it
 * does not queue behind a live holder: it watches the item for up to one lease. If the holder
 * renews meanwhile it is alive, and LeaseHeld names it. If the lease runs out without a renewal
 * (the holder was killed, or lost its machine), the newcomer takes it over: within 60 s of the
 * holder's last renewal. A holder on this very machine whose process is gone is known dead at once.
 *
 * The holder stops writing before its lease can have run out (`assertHeld`, before every batch and
 * transaction, by its own monotonic clock), and every switch transaction checks the lock is still
 * its own: a writer that was paused past its lease never writes again.
 *
 * A holder that knows when it will stop (the deployed sync's invocation, shared/sync/deployed.ts)
 * announces that end on the item; its successor, asked to wait for a holder ending soon, takes the
 * lease over the moment it is given back instead of watching for a renewal.
 */
export const LEASE_MS = 60_000;
export const RENEW_EVERY_MS = 15_000;
const POLL_MS = 1_000;
/** How often a holder that is about to end is looked at, so its successor takes over at once. */
const HANDOVER_POLL_MS = 100;

/** Who holds a lease: what the messages call the holder. */
export type Holder = 'import' | 'sync';

export interface LeaseOptions {
  leaseMs?: number;
  renewEveryMs?: number;
  /** Told once when the lease is held by another live holder and has to be waited for. */
  onWait?: (message: string) => void;
  /**
   * When this holder will give the lease back (wall-clock ms), written on the item: a holder that
   * knows its end (a Lambda invocation) announces it, so the next one can wait for it.
   */
  endsAt?: number;
  /**
   * Handing over instead of watching: a live holder that announced an end within this many ms is
   * waited for, and its lease taken over as soon as it is given back (or runs out); any other live
   * holder is LeaseHeld at once.
   */
  waitForEndWithinMs?: number;
  /**
   * Fields the holder keeps on the lease item, written with every renewal and left there when the
   * lease is given back (the sync's position in the source's log: no write of its own).
   */
  carry?: () => Record<string, unknown>;
}

export interface LeaseItem {
  lock_owner: string;
  holder: Holder;
  host: string;
  boot_id: string;
  pid: number;
  started_at: number;
  renewed_at: number;
  expires_at: number;
  /** The holder's announced end (LeaseOptions.endsAt), when it announced one. */
  ends_at?: number;
}

/** The holder of a lease, as one who wants it says it: `another import`, `a sync`. */
function holderWord(item: LeaseItem, wanting: Holder): string {
  const holder = item.holder ?? 'import';
  return holder === wanting ? `another ${holder}` : holder === 'sync' ? 'a sync' : 'an import';
}

/** Another holder is alive: it renewed its lease while this one watched. */
export class LeaseHeld extends Error {
  constructor(item: LeaseItem, wanting: Holder) {
    super(
      `${holderWord(item, wanting)} is running (${item.host}, pid ${item.pid}, ` +
        `started ${new Date(item.started_at).toISOString()}); it renews its lease, so it is alive` +
        (wanting === 'import' ? ': run this import again when that one has finished' : ''),
    );
    this.name = 'LeaseHeld';
  }
}

/** This holder lost its lease (it was paused past it, and another took over). */
export class LeaseLost extends Error {
  constructor() {
    super(
      'this writer lost its lease (it could not renew it for too long, and another may have taken over); ' +
        'nothing more was written: run it again',
    );
    this.name = 'LeaseLost';
  }
}

/** This machine's boot id (Linux), so a pid is only judged on the machine and boot it belongs to. */
export const BOOT_ID = (() => {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return '';
  }
})();

/** A lease this process holds: what a writer checks before it writes, and gives back at the end. */
export type Lease = Awaited<ReturnType<typeof acquireLease>>;

/** The lease of the one import that may run against the table at a time. */
export const acquireImportLease = (doc: DynamoDBDocumentClient, tableName: string, options: LeaseOptions = {}) =>
  acquireLease(doc, tableName, importLeaseKey(), 'import', options);

/** The lease of the one sync running against the table. */
export const acquireSyncLease = (doc: DynamoDBDocumentClient, tableName: string, options: LeaseOptions = {}) =>
  acquireLease(doc, tableName, syncLeaseKey(), 'sync', options);

/** The sync's lease as it stands, when a live holder has it (not run out, not left by a dead process here). */
export async function readSyncLease(doc: DynamoDBDocumentClient, tableName: string): Promise<LeaseItem | undefined> {
  const { Item } = await doc.send(new GetCommand({ TableName: tableName, Key: syncLeaseKey(), ConsistentRead: true }));
  const item = Item as LeaseItem | undefined;
  return item && item.expires_at > Date.now() && !isDeadHere(item) ? item : undefined;
}

/** Takes a lease: at once when free, expired or left by a dead process here; else as the module comment says. */
async function acquireLease(
  doc: DynamoDBDocumentClient,
  tableName: string,
  key: Key,
  holder: Holder,
  { leaseMs = LEASE_MS, renewEveryMs = RENEW_EVERY_MS, onWait, endsAt, waitForEndWithinMs, carry }: LeaseOptions,
) {
  const owner = randomBytes(12).toString('hex');
  /** The lease's key, on condition that this process holds it. */
  const ifStillOurs = () => ({
    TableName: tableName,
    Key: key,
    ConditionExpression: 'lock_owner = :me',
    ExpressionAttributeValues: { ':me': owner },
  });
  let renewedAt = performance.now();
  /** The lease as this process last wrote it. */
  let held: LeaseItem | undefined;
  let lost = false;

  /** Sends a conditional write; false when its condition failed. */
  const ifOurs = (command: PutCommand | DeleteCommand) => conditionally(doc.send(command as PutCommand));

  /**
   * Writes the lease as ours, if it is still as we saw it (free, the same stale lease, or ours as we
   * last wrote it).
   */
  const write = async (seen: LeaseItem | undefined) => {
    const sent = performance.now();
    const now = Date.now();
    const item: LeaseItem = {
      lock_owner: owner,
      holder,
      host: hostname(),
      boot_id: BOOT_ID,
      pid: process.pid,
      started_at: held?.started_at ?? now,
      renewed_at: now,
      expires_at: now + leaseMs,
      ...(endsAt !== undefined && { ends_at: endsAt }),
    };
    // Our own lease is renewed whatever renewal last reached the table (one whose answer was lost, too).
    const condition = !seen
      ? 'attribute_not_exists(pk)'
      : seen === held
        ? 'lock_owner = :owner'
        : 'lock_owner = :owner AND renewed_at = :renewed';
    const written = await ifOurs(
      new PutCommand({
        TableName: tableName,
        Item: { ...key, ...carry?.(), ...item },
        ConditionExpression: condition,
        ExpressionAttributeValues: seen && {
          ':owner': seen.lock_owner,
          ...(seen !== held && { ':renewed': seen.renewed_at }),
        },
      }),
    );
    if (written) [renewedAt, held] = [sent, item];
    return written;
  };

  let firstSeen: LeaseItem | undefined;
  for (;;) {
    const current = (await doc.send(new GetCommand({ TableName: tableName, Key: key, ConsistentRead: true }))).Item as
      | LeaseItem
      | undefined;
    if (!current || current.expires_at <= Date.now() || isDeadHere(current)) {
      if (await write(current)) break;
      continue; // someone else was faster: look again
    }
    if (waitForEndWithinMs !== undefined) {
      const endsIn = current.ends_at === undefined ? Number.POSITIVE_INFINITY : current.ends_at - Date.now();
      if (endsIn > waitForEndWithinMs) throw new LeaseHeld(current, holder);
      if (firstSeen?.lock_owner !== current.lock_owner) {
        firstSeen = current;
        onWait?.(`taking over from ${holderWord(current, holder)} (${current.host}, pid ${current.pid}) when it ends`);
      }
      // Seconds away, a look a second; then often, so the lease changes hands within a fraction of one.
      await sleep(endsIn > 2 * POLL_MS ? POLL_MS : HANDOVER_POLL_MS);
      continue;
    }
    if (firstSeen?.lock_owner !== current.lock_owner) {
      firstSeen = current;
      const within = Math.ceil((current.expires_at - Date.now()) / 1000);
      onWait?.(
        `waiting for the lock of ${holderWord(current, holder)} (${current.host}, pid ${current.pid}): ` +
          `taken over if it is not renewed within ${within} s`,
      );
    } else if (current.renewed_at !== firstSeen.renewed_at) {
      throw new LeaseHeld(current, holder);
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
    /** Throws unless the lease is certainly still ours: it stops a renewal interval before anyone may take over. */
    assertHeld(): void {
      if (lost || performance.now() - renewedAt > leaseMs - renewEveryMs) throw new LeaseLost();
    },
    /** A transaction action that fails the transaction unless the lease is still ours. */
    conditionCheck: () => ({ ConditionCheck: ifStillOurs() }),
    /** Gives the lease back: the item goes, or with `carry`, stays, run out, with what it carries. */
    async release(): Promise<void> {
      clearInterval(timer);
      if (!carry) return void (await ifOurs(new DeleteCommand(ifStillOurs())));
      const item = { ...key, ...carry(), ...held, expires_at: 0 };
      await ifOurs(new PutCommand({ ...ifStillOurs(), Item: item, Key: undefined } as never));
    },
  };
}

/** A lease held by a process of this machine (same host and boot) that no longer exists. */
export function isDeadHere(held: { boot_id?: string; host: string; pid: number }): boolean {
  if (!held.boot_id || held.boot_id !== BOOT_ID || held.host !== hostname() || held.pid === process.pid) return false;
  try {
    process.kill(held.pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
