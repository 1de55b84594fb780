import { setTimeout as sleep } from 'node:timers/promises';
import { TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { WRITER_RETRIES } from '../table/retry.ts';
import { type Key, LIST_RESOURCES, pendingKey, teamListKey, teamRecordKey, teamRefKeys } from '../table/keys.ts';
import {
  financeItem,
  listHeadItem,
  replacedItem,
  retiredItem,
  type TeamState,
  teamListItem,
  teamRecordItem,
  teamRefs,
} from './items.ts';
import type { RemovedTeamPlan, TeamPlan } from './plan.ts';
import { LockLost } from './team-locks.ts';
import type { Writer } from './writer.ts';

/**
 * The switch of a team (docs/contract.md, sections 7 and 9): one transaction puts what readers read
 * next (the list heads and finance summary by id and by slug, the team's record) and records in the
 * ledger what it replaced, on condition that the team is as the plan read it (its record's revision,
 * each list's revision) and that this writer still holds the team's lock. Either all of it happens,
 * or none: a reader sees a team before or after, never half-written.
 */

/** Thrown when a team's state moved while it was written: nothing of that team switched. */
export class TeamChanged extends Error {
  constructor(teamId: number, cause: unknown) {
    super(`team ${teamId} changed while it was being written (a writer that does not take its lock ran meanwhile)`, {
      cause,
    });
    this.name = 'TeamChanged';
  }
}

type Action = { Put?: { Item: Key } & Record<string, unknown>; Delete?: { Key: Key } & Record<string, unknown> };

/** Switches a unit: one team, or teams that swap slugs, in one transaction. */
export async function switchUnit(writer: Writer, unit: TeamPlan[]): Promise<void> {
  const teams = unit.filter((team) => !onlyMembers(team));
  if (teams.length === 0) return;
  const owners = unit.map((team) => team.desired.identity.id);
  const byKey = new Map<string, Action>();
  for (const team of teams) {
    for (const action of switchActions(writer, team, owners)) {
      const { Key, Item } = (action.Put ?? action.Delete) as { Key?: Key; Item?: Key };
      const key = JSON.stringify([(Key ?? Item)!.pk, (Key ?? Item)!.sk]);
      // A slug copy one team gives up and another takes: the put alone (a transaction names an item once).
      if (!byKey.has(key) || action.Put) byKey.set(key, action);
    }
  }
  await transact(writer, owners, [...byKey.values()]);
}

/** Whether only the team's members change: they join and leave, no transaction needed. */
export const onlyMembers = ({ changes }: TeamPlan) => changes.size === 1 && changes.has('members');

/** The actions that switch one team (`owners`: the teams its slug copies may be held by). */
function switchActions(writer: Writer, team: TeamPlan, owners: number[]): Action[] {
  const { desired, stored, next, changes } = team;
  const { id } = desired.identity;
  const slugMoved = stored !== undefined && stored.identity.slug !== desired.identity.slug;
  const financeJson = desired.finance?.json ?? team.keptFinanceJson;
  const now = writer.clock();
  const own = ownRef(owners);
  // The record changes with the team's identity, finance or members; a list switches on its own revision.
  const recordChanges = !stored || ['identity', 'finance', 'members'].some((part) => changes.has(part as never));
  const actions: Action[] = recordChanges ? [put(writer, teamRecordItem(next), atRevision(stored?.revision))] : [];
  for (const ref of teamRefs(desired.identity)) {
    const byId = ref === id;
    // The id's copies change with their part; a slug's are new copies too when the slug moved.
    const fresh = !stored || (!byId && slugMoved);
    for (const list of LIST_RESOURCES) {
      if (!fresh && !changes.has(list)) continue;
      const item = listHeadItem(ref, id, next.membersGeneration, list, next.lists[list]);
      actions.push(put(writer, item, byId ? atRevision(stored?.lists[list].layout.revision) : own));
    }
    if ((fresh || changes.has('finance')) && financeJson !== undefined) {
      const item = financeItem(desired.identity, financeJson, next.financeFingerprint, ref, next.membersGeneration);
      actions.push(put(writer, item, byId ? {} : own));
    }
  }
  if (slugMoved && stored.identity.slug !== undefined) {
    for (const key of teamRefKeys(stored.identity.slug)) actions.push(remove(writer, key, own));
  }
  for (const list of LIST_RESOURCES) {
    const planned = team.lists[list];
    if (!planned) continue;
    const old = stored?.lists[list].layout;
    if (planned.mode === 'rebuild') {
      actions.push(remove(writer, pendingKey(id, planned.part.layout.generation, list)));
      if (old) actions.push(put(writer, retiredItem(id, old.generation, list, now)));
    } else if (planned.edited.replaced.length > 0) {
      const { generation, revision } = planned.part.layout;
      actions.push(put(writer, replacedItem(id, generation, list, revision, planned.edited.replaced, now)));
    }
  }
  if (!stored) actions.push(put(writer, teamListItem(id)));
  return actions;
}

/** A removed team: its list heads, finance copies, record and list entry go; its generations retire. */
export async function removeTeamItems(writer: Writer, { stored }: RemovedTeamPlan): Promise<void> {
  const { id, slug } = stored.identity;
  const now = writer.clock();
  await transact(
    writer,
    [id],
    [
      remove(writer, teamRecordKey(id), atRevision(stored.revision)),
      ...teamRefKeys(id).map((key) => remove(writer, key)),
      ...(slug === undefined ? [] : teamRefKeys(slug).map((key) => remove(writer, key, ownRef([id])))),
      remove(writer, teamListKey(id)),
      ...LIST_RESOURCES.map((list) => put(writer, retiredItem(id, stored.lists[list].layout.generation, list, now))),
      put(writer, retiredItem(id, stored.membersGeneration, 'MEMBER', now)),
    ],
  );
}

/**
 * Once every member has joined and left: the members' fingerprint on the team's record, so that the
 * next write finds nothing to do. Written last, so that a writer killed before it leaves the members
 * still to compare, and the next one completes them.
 */
export async function recordMembers(writer: Writer, team: TeamState, fingerprint: string): Promise<void> {
  const teamId = team.identity.id;
  writer.locks.assertHeld(teamId);
  try {
    await writer.doc.send(
      new UpdateCommand({
        TableName: writer.tableName,
        Key: teamRecordKey(teamId),
        UpdateExpression: 'SET members_fingerprint = :fingerprint',
        ConditionExpression: 'revision = :revision',
        ExpressionAttributeValues: { ':fingerprint': fingerprint, ':revision': team.revision },
      }),
    );
  } catch (error) {
    if ((error as Error).name === 'ConditionalCheckFailedException') throw new TeamChanged(teamId, error);
    throw error;
  }
}

/**
 * Cancellation reasons that say DynamoDB was too busy, not that a condition failed: "the entire
 * operation fails with a TransactionCanceledException if any item experiences throttling", with
 * `ThrottlingError` (on-demand) or `ProvisionedThroughputExceeded` (provisioned) for those items, in
 * https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html and
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/throttling-key-range-limit-exceeded-mitigation.html
 * The SDK does not retry a cancelled transaction; the switch sends it again itself.
 */
const BUSY = new Set(['ThrottlingError', 'ProvisionedThroughputExceeded', 'TransactionConflict']);

/**
 * Sends a switch, the locks' checks first (so that a lost lock is the first cancellation reason). A
 * switch cancelled only because DynamoDB throttled it (or another transaction held one of its items)
 * is sent again after an exponential backoff with jitter, as DynamoDB's guide asks of throttled
 * requests, for about a minute (shared/table/retry.ts, WRITER_RETRIES); the lock is checked again
 * before each attempt.
 */
async function transact(writer: Writer, teamIds: number[], actions: Action[]): Promise<void> {
  const checks = teamIds.map((teamId) => writer.locks.conditionCheck(teamId));
  const { retries, minDelayMs = 50, maxDelayMs = 5_000 } = WRITER_RETRIES;
  for (let attempt = 0; ; attempt++) {
    for (const teamId of teamIds) writer.locks.assertHeld(teamId);
    try {
      await writer.doc.send(new TransactWriteCommand({ TransactItems: [...checks, ...actions] as never }));
      return;
    } catch (error) {
      if ((error as Error).name !== 'TransactionCanceledException') throw error;
      const reasons = (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
      const lost = reasons.slice(0, checks.length).findIndex((reason) => reason.Code === 'ConditionalCheckFailed');
      if (lost >= 0) throw new LockLost(teamIds[lost]!);
      const busy =
        reasons.some((reason) => BUSY.has(reason.Code ?? '')) &&
        reasons.every((reason) => reason.Code === 'None' || BUSY.has(reason.Code ?? ''));
      if (!busy || attempt >= retries) throw new TeamChanged(teamIds[0]!, error);
      const ceiling = Math.min(maxDelayMs, minDelayMs * 2 ** attempt);
      await sleep(Math.min(maxDelayMs, Math.round(ceiling * (1 + Math.random()))));
    }
  }
}

/** The team's record as the plan read it: absent (undefined), or at its revision. */
const atRevision = (revision: number | undefined) =>
  revision === undefined
    ? { ConditionExpression: 'attribute_not_exists(pk)' }
    : { ConditionExpression: 'revision = :revision', ExpressionAttributeValues: { ':revision': revision } };

/**
 * A team's slug copies belong to it: a copy another team holds is never overwritten or removed (but by
 * a team it swaps slugs with, in the same transaction).
 */
const ownRef = (teamIds: number[]) => ({
  ConditionExpression: `attribute_not_exists(pk) OR team_id IN (${teamIds.map((_, i) => `:id${i}`).join(', ')})`,
  ExpressionAttributeValues: Object.fromEntries(teamIds.map((id, i) => [`:id${i}`, id])),
});

const put = (writer: Writer, Item: Key, condition = {}): Action => ({
  Put: { TableName: writer.tableName, Item, ...condition },
});
const remove = (writer: Writer, Key: Key, condition = {}): Action => ({
  Delete: { TableName: writer.tableName, Key, ...condition },
});
