import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { teamLockKey } from '../table/keys.ts';
import { BOOT_ID, type Holder, isDeadHere, LEASE_MS, RENEW_EVERY_MS } from './lease.ts';
import { conditionally, type TableRef } from './writer.ts';

/**
 * The writers' locks, one per team (docs/contract.md, section 9, "At any size"): an import or a sync
 * holds a team's lock while it writes that team, so two writers never interleave within a team, and
 * writers of different teams never wait for each other.
 *
 * A lock is a lease: it names its holder and runs out 60 s after its last renewal, which the holder
 * makes every 15 s for all the locks it holds. A lock that ran out, or whose holder is a process of
 * this machine that no longer exists, is taken over at once; the taker is told (`tookOver`), since the
 * dead holder may have left items of a write it never switched to. The holder stops writing before
 * its lock can have run out (assertHeld, by its own monotonic clock), and every switch transaction
 * checks the lock is still its own (conditionCheck).
 *
 * Taking and giving back a lock is one write each: what a small change pays for it.
 */

/** How often a writer looks again at a lock another holds. */
const WAIT_POLL_MS = 250;

interface LockItem {
  owner: string;
  holder: Holder;
  host: string;
  boot_id: string;
  pid: number;
  expires_at: number;
}

/** A lock that was lost: its holder could not renew it in time, and another may have taken it over. */
export class LockLost extends Error {
  constructor(teamId: number) {
    super(
      `this writer lost the lock of team ${teamId} (it could not renew it for too long, and another ` +
        'writer may have taken over); nothing more was written to that team: run it again',
    );
    this.name = 'LockLost';
  }
}

/** What a writer says of a lock another live writer holds, while it waits. */
const heldBy = (item: LockItem) => `${item.holder === 'sync' ? 'a sync' : 'an import'} (${item.host}, pid ${item.pid})`;

/** The team locks one writer holds, renewed together. */
export class TeamLocks {
  private readonly held = new Map<number, number>(); // team id → when last renewed (monotonic ms)
  private readonly lost = new Set<number>();
  private timer?: NodeJS.Timeout;

  private readonly table: TableRef;
  readonly owner: string;
  private readonly holder: Holder;
  private readonly leaseMs: number;
  private readonly renewEveryMs: number;

  constructor(table: TableRef, owner: string, holder: Holder, leaseMs = LEASE_MS, renewEveryMs = RENEW_EVERY_MS) {
    this.table = table;
    this.owner = owner;
    this.holder = holder;
    this.leaseMs = leaseMs;
    this.renewEveryMs = renewEveryMs;
  }

  /**
   * Takes the team's lock, waiting while another live writer holds it (`onWait` told once, with who).
   * Says whether it was taken over from a writer that died or ran out of time.
   */
  async lock(teamId: number, onWait?: (line: string) => void, signal?: AbortSignal): Promise<{ tookOver: boolean }> {
    let told = false;
    for (;;) {
      const now = Date.now();
      const item: LockItem & Record<string, unknown> = {
        ...teamLockKey(teamId),
        owner: this.owner,
        holder: this.holder,
        host: hostname(),
        boot_id: BOOT_ID,
        pid: process.pid,
        expires_at: now + this.leaseMs,
      };
      const sent = performance.now();
      if (await this.put(item, 'attribute_not_exists(pk)', {})) return this.took(teamId, sent, false);
      const current = await this.read(teamId);
      if (!current) continue;
      if (current.expires_at <= Date.now() || isDeadHere(current)) {
        if (await this.put(item, '#owner = :seen', { ':seen': current.owner })) return this.took(teamId, sent, true);
        continue;
      }
      // Said of another writer only: this one's own write of the team beside (a team written apart, a
      // compaction) is no wait an operator can act on.
      if (!told && current.owner !== this.owner)
        onWait?.(`waiting for team ${teamId}, which ${heldBy(current)} is writing`);
      told = true;
      signal?.throwIfAborted();
      await sleep(WAIT_POLL_MS, undefined, { signal });
    }
  }

  /** Gives a team's lock back (a lock already lost is left to its new holder). */
  async unlock(teamId: number): Promise<void> {
    this.held.delete(teamId);
    this.lost.delete(teamId);
    if (this.held.size === 0) this.stopRenewing();
    await conditionally(this.table.doc.send(new DeleteCommand(this.ifMine(teamId))));
  }

  /** Throws LockLost unless the team's lock is certainly still held: checked before every write of the team. */
  assertHeld(teamId: number): void {
    const renewedAt = this.held.get(teamId);
    if (
      renewedAt === undefined ||
      this.lost.has(teamId) ||
      performance.now() - renewedAt > this.leaseMs - this.renewEveryMs
    )
      throw new LockLost(teamId);
  }

  /** A transaction action that fails the transaction unless the team's lock is still this writer's. */
  conditionCheck(teamId: number) {
    return { ConditionCheck: this.ifMine(teamId) };
  }

  /** The team's lock item, on condition that this writer holds it (`owner` is a reserved word). */
  private ifMine(teamId: number) {
    return {
      TableName: this.table.tableName,
      Key: teamLockKey(teamId),
      ConditionExpression: '#owner = :me',
      ExpressionAttributeNames: { '#owner': 'owner' },
      ExpressionAttributeValues: { ':me': this.owner } as Record<string, unknown>,
    };
  }

  /** Gives back every lock still held (the end of a write, however it ends). */
  async releaseAll(): Promise<void> {
    await Promise.all([...this.held.keys()].map((teamId) => this.unlock(teamId).catch(() => {})));
    this.stopRenewing();
  }

  private took(teamId: number, sentAt: number, tookOver: boolean) {
    this.held.set(teamId, sentAt);
    this.lost.delete(teamId);
    this.timer ??= setInterval(() => void this.renew(), this.renewEveryMs).unref();
    return { tookOver };
  }

  private async renew(): Promise<void> {
    await Promise.all(
      [...this.held.keys()].map(async (teamId) => {
        const sent = performance.now();
        const mine = this.ifMine(teamId);
        const update = new UpdateCommand({
          ...mine,
          UpdateExpression: 'SET expires_at = :until',
          ExpressionAttributeValues: { ...mine.ExpressionAttributeValues, ':until': Date.now() + this.leaseMs },
        });
        // Taken over: never write that team again. Any other failure: the next renewal tries again.
        const renewed = await conditionally(this.table.doc.send(update)).catch(() => undefined);
        if (renewed === false) this.lost.add(teamId);
        else if (renewed && this.held.has(teamId)) this.held.set(teamId, sent);
      }),
    );
  }

  private stopRenewing(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async put(item: Record<string, unknown>, condition: string, values: Record<string, unknown>) {
    const put = new PutCommand({
      TableName: this.table.tableName,
      Item: item,
      ConditionExpression: condition,
      ...(condition.includes('#owner') && { ExpressionAttributeNames: { '#owner': 'owner' } }),
      ...(Object.keys(values).length > 0 && { ExpressionAttributeValues: values }),
    });
    return conditionally(this.table.doc.send(put));
  }

  private async read(teamId: number): Promise<LockItem | undefined> {
    const { Item } = await this.table.doc.send(
      new GetCommand({ TableName: this.table.tableName, Key: teamLockKey(teamId), ConsistentRead: true }),
    );
    return Item as LockItem | undefined;
  }
}
