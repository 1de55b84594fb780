import { stat } from 'node:fs/promises';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type ApplyHooks, applyPlan, ItemsChanged } from '../../shared/write/apply.ts';
import { type EmitItem, type ItemNeeds, itemHash } from '../../shared/write/desired.ts';
import type { ListResource } from '../../shared/table/keys.ts';
import { acquireImportLease, type LeaseOptions } from '../../shared/write/lease.ts';
import { type PlanProblem, plannedTeams, readPlan } from '../../shared/write/plan.ts';
import { TeamLocks } from '../../shared/write/team-locks.ts';
import type { Writer } from '../../shared/write/writer.ts';
import { desiredState } from './desired-state.ts';
import { ordinalOf } from './id-list.ts';
import { readSnapshotRecords } from './json-records.ts';
import { locate, Problems, say } from './problems.ts';
import type { ValidSnapshot } from './validation.ts';
import { servedJson } from '../../shared/domain/served-json.ts';

/**
 * Pass 2 of an import (docs/contract.md, section 7): the snapshot, validated whole by pass 1
 * (validation.ts), as the desired state of the teams, users and tokens it names, written by the
 * table's one write path (shared/write/apply.ts) under the import's lease and each team's lock. Each
 * part of each team that differs from what the table holds is changed by the item, or written whole
 * beside the one readers use, and switched to; what is the same is not written at all. The projects
 * and daemons that are written are read from the file again, which must be the file pass 1 validated.
 */

export type ImportProgress = Parameters<NonNullable<ApplyHooks['onProgress']>>[0];

export interface ImportOptions extends ApplyHooks {
  /** One line per event worth a line (waiting for the lock, a sweep that stopped). */
  log?: (line: string) => void;
  /** Wall-clock milliseconds: retention is measured with it. */
  clock?: () => number;
  lock?: Pick<LeaseOptions, 'leaseMs' | 'renewEveryMs'>;
  /** The client for long streams of writes to one partition key (shared/write/writer.ts); default `doc`. */
  bulk?: DynamoDBDocumentClient;
}

/** What an import did: the snapshot's counts, and how many of its teams, projects and daemons it wrote. */
interface ImportSummary {
  teams: number;
  items: number;
  users: number;
  tokens: number;
  teamsChanged: number;
  itemsWritten: number;
}

/** Thrown before anything is written when the table itself makes the snapshot unusable. */
export class ImportRejected extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ImportRejected';
    this.problems = problems;
  }
}

/** The file is not the one validated any more: nothing was switched. */
class SnapshotChanged extends Error {
  constructor(detail: string) {
    super(`the snapshot file changed after it was validated (${detail}); no team was switched: run the import again`);
    this.name = 'SnapshotChanged';
  }
}

export async function importSnapshot(
  doc: DynamoDBDocumentClient,
  tableName: string,
  snapshot: ValidSnapshot,
  options: ImportOptions = {},
): Promise<ImportSummary> {
  await assertUnchanged(snapshot);
  const log = options.log ?? (() => {});
  const clock = options.clock ?? Date.now;
  const lease = await acquireImportLease(doc, tableName, { ...options.lock, onWait: log });
  const locks = new TeamLocks(
    { doc, tableName },
    lease.owner,
    'import',
    options.lock?.leaseMs,
    options.lock?.renewEveryMs,
  );
  const counts = {
    teams: snapshot.teams.length,
    items: snapshot.items,
    users: snapshot.users.length,
    tokens: snapshot.tokens.length,
  };
  try {
    const w: Writer = { doc, bulk: options.bulk, tableName, owner: lease.owner, locks, clock, log };
    const plan = await readPlan(w, desiredState(snapshot), { startedAt: clock(), tokenOfAnotherUser: 'refuse' });
    if (plan.problems.length > 0) throw new ImportRejected(describe(plan.problems, snapshot));
    // Every step writes only what it has to: a snapshot that changes nothing writes nothing (a dead
    // writer's leftovers aside, which go whatever the snapshot says).
    const hooks = { onWait: log, ...options };
    const { itemsWritten } = await applyPlan(w, plan, (needs, emit) => readItems(snapshot, needs, emit), hooks).catch(
      (error) => {
        throw error instanceof ItemsChanged ? new SnapshotChanged(error.message) : error;
      },
    );
    await locks.releaseAll();
    await lease.release();
    return { ...counts, teamsChanged: plannedTeams(plan).length, itemsWritten };
  } catch (error) {
    // The import's own failure is the one to report; a lock not given back expires by itself.
    await locks.releaseAll().catch(() => {});
    await lease.release().catch(() => {});
    throw error;
  }
}

/** The plan's problems in the import's words, each naming the record of the snapshot it is about. */
function describe(problems: PlanProblem[], snapshot: ValidSnapshot): string[] {
  const said = new Problems();
  const userAt = (id: number) => snapshot.users.findIndex((user) => user.id === id);
  for (const problem of problems) {
    switch (problem.kind) {
      case 'slugTaken':
        said.add(say.slugTaken(problem.team.where, problem.team.identity.slug!, problem.holder));
        break;
      case 'slugCycle':
        said.add(
          say.slugCycle(
            problem.team.where,
            problem.team.identity.slug!,
            problem.holder.where,
            problem.holder.identity.slug ?? '(none)',
          ),
        );
        break;
      case 'tokenOfAnotherUser':
        said.add(say.tokenOfAnotherUser(problem.token.where, problem.owner));
        break;
      case 'tooManyTeams':
        said.add(
          say.tooManyTeams(locate('users', userAt(problem.userId), problem.userId), problem.teams, problem.limit),
        );
    }
  }
  return said.lines();
}

/**
 * The projects and daemons a write needs, from the file again (one pass, whatever it needs). Pass 1
 * checked every record of this file, and its fingerprint is checked again at the end, before any
 * switch: a file changed meanwhile can only leave garbage in a generation that is never switched to
 * (and is swept). Items asked by id (a list changed by the item) are each checked against the hash
 * pass 1 gave them, so that the file is read only as far as the last of them: a change of one project
 * of 100,000 does not wait for the rest of the file to be parsed.
 */
async function readItems(snapshot: ValidSnapshot, needs: ItemNeeds, emit: EmitItem): Promise<void> {
  await assertUnchanged(snapshot);
  const teamsById = new Map(snapshot.teams.map((team) => [team.id, team]));
  const asked = (teamId: number, list: ListResource) => needs.get(teamId)?.get(list);
  const lists = [...needs.values()].flatMap((byList) => [...byList.values()]);
  let left = lists.reduce((n, ids) => n + (ids === 'all' ? Number.POSITIVE_INFINITY : ids.size), 0);
  if (left === 0) return;
  try {
    const read = await readSnapshotRecords(
      snapshot.path,
      (collection, _index, fields) => {
        if (collection !== 'projects' && collection !== 'daemons') return undefined;
        const project = collection === 'projects';
        const teamId = project ? fields.team_id : snapshot.environmentTeams.get(fields.environment_id as number);
        const team = teamsById.get(teamId as number);
        const id = fields.id as number;
        const ordinal = team ? ordinalOf(project ? team.projectIds : team.daemonIds, id) : 0;
        if (!team || ordinal === 0) throw new SnapshotChanged(`one of its ${collection} was not validated`);
        const ids = asked(team.id, collection);
        if (ids === undefined || (ids !== 'all' && !ids.has(id))) return undefined;
        const json = servedJson(collection, fields);
        if (ids !== 'all' && itemHash(json) !== (project ? team.projectHashes : team.daemonHashes)[ordinal - 1]) {
          throw new SnapshotChanged(`${collection} ${id} is not as validated`);
        }
        const emitted = emit(team.id, collection, id, json);
        if (--left > 0) return emitted;
        return Promise.resolve(emitted).then(() => {
          throw new AllRead();
        });
      },
      new Problems(),
    );
    if (!read.readable || read.sha256 !== snapshot.sha256) throw new SnapshotChanged('its SHA-256 differs');
  } catch (error) {
    if (!(error instanceof AllRead)) throw error;
  }
}

/** Every item asked by id has been read, each as pass 1 validated it: the rest of the file is not needed. */
class AllRead extends Error {}

/** The file must still be the one pass 1 validated (its fingerprint is checked again in pass 2). */
async function assertUnchanged(snapshot: ValidSnapshot): Promise<void> {
  const { size, mtimeMs } = await stat(snapshot.path);
  if (size !== snapshot.bytes || mtimeMs !== snapshot.modifiedMs) {
    throw new SnapshotChanged('its size or modification time differs');
  }
}
