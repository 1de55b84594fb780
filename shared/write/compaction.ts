import type { ListResource } from '../table/keys.ts';
import { baseItemKey } from '../table/list-layout.ts';
import { underLocks } from './apply.ts';
import { newGenerationId, pendingItem, resourceItem, type TeamState } from './items.ts';
import { itemHash } from './desired.ts';
import { listHashRequests } from './list-hashes.ts';
import { denseLayout, editList, type ListEdit, needsCompaction, type StoredItem } from './list-edits.ts';
import { readStoredList } from './list-store.ts';
import { readTeamStates, type TeamPlan } from './plan.ts';
import { switchUnit } from './team-switch.ts';
import { bulkRef, putRequest, requestWriter, type Writer, writeRequests } from './writer.ts';

/**
 * A list rewritten dense (docs/storage.md, "Compaction beside, never in the way"): once a list's
 * overlay has grown past its budget, its items are written as a new generation beside the one readers
 * use, without the team's lock, so that the team's changes keep landing by the item meanwhile (a list
 * of 100,000 items takes at least 100 s on one partition key). Only then, under the lock, what changed
 * meanwhile is written into the new generation too, and the list's heads switch to it. Its cost counts
 * toward the changes that grew the overlay (docs/performance.md).
 */
export async function compactList(writer: Writer, teamId: number, list: ListResource): Promise<boolean> {
  // One compaction of a list at a time: the changes that land meanwhile find its overlay still past
  // the budget, and would start another.
  const running = `${writer.tableName}#${teamId}#${list}`;
  if (compacting.has(running)) return false;
  compacting.add(running);
  try {
    return await compactOnce(writer, teamId, list);
  } finally {
    compacting.delete(running);
  }
}

/** Lists this process is compacting. */
const compacting = new Set<string>();

async function compactOnce(writer: Writer, teamId: number, list: ListResource): Promise<boolean> {
  const before = (await readTeamStates(writer, [teamId])).get(teamId);
  if (!before || !needsCompaction(before.lists[list].layout)) return false;
  const snapshot = await readStoredList(writer, teamId, list, before.lists[list]);
  const generation = newGenerationId(writer.clock());
  await writeRequests(writer, [putRequest(pendingItem(teamId, generation, list, writer.owner, writer.clock()))]);
  const batch = requestWriter(bulkRef(writer));
  const dense: StoredItem[] = snapshot.map((item, i) => ({
    id: item.id,
    json: item.json,
    key: baseItemKey(i + 1),
    slot: i + 1,
    inserted: false,
  }));
  for (const item of dense) await batch.add(putRequest(resourceItem(teamId, generation, list, item.key, item.json)));
  // What a later diff compares with instead of reading the list (list-hashes.ts).
  const ids = dense.map((item) => item.id);
  const hashes = dense.map((item) => itemHash(item.json));
  for (const request of listHashRequests(teamId, generation, list, ids, hashes)) await batch.add(request);
  await batch.flush();
  return underLocks(writer, [teamId], {}, async () => {
    const now = (await readTeamStates(writer, [teamId])).get(teamId);
    if (!now || now.lists[list].layout.generation !== before.lists[list].layout.generation) return false;
    const current = now.lists[list];
    // What changed while the generation was written beside: written into it too, by the item.
    const edits =
      now.lists[list].layout.revision === before.lists[list].layout.revision
        ? []
        : changesBetween(snapshot, await readStoredList(writer, teamId, list, current));
    const edited = editList(denseLayout(generation, dense.length, current.layout.revision + 1), dense, edits);
    await writeRequests(
      writer,
      edited.writes.map((write) => putRequest(resourceItem(teamId, generation, list, write.key, write.json))),
      teamId,
    );
    const part = { layout: edited.layout, fingerprint: current.fingerprint };
    await switchUnit(writer, [compactionPlan(now, list, part)]);
    return true;
  });
}

/** The edits that make list `from` into list `to` (both in id order): what changed meanwhile. */
function changesBetween(from: readonly StoredItem[], to: readonly StoredItem[]): ListEdit[] {
  const before = new Map(from.map((item) => [item.id, item.json]));
  const edits: ListEdit[] = [];
  for (const item of to) {
    if (before.get(item.id) !== item.json) edits.push({ id: item.id, json: item.json });
    before.delete(item.id);
  }
  for (const id of before.keys()) edits.push({ id, json: null });
  return edits;
}

/** The switch of one list to its new generation, as the writers' switch takes a team's plan. */
function compactionPlan(team: TeamState, list: ListResource, part: TeamState['lists'][ListResource]): TeamPlan {
  const lists = { ...team.lists, [list]: part };
  return {
    desired: { identity: team.identity, where: `team ${team.identity.id}` },
    stored: team,
    next: { ...team, lists },
    changes: new Set([list]),
    lists: { [list]: { mode: 'rebuild', part, ids: [] } },
    joining: [],
    leaving: [],
  };
}
