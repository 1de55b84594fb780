import { stat } from 'node:fs/promises';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { acquireWriterLock, type LeaseOptions } from '../../shared/write/lease.ts';
import { type DesiredState, type PlanProblem, readPlan } from '../../shared/write/plan.ts';
import { applyPlan, type EmitItem, ItemsChanged, type StepHooks } from '../../shared/write/steps.ts';
import type { Writer } from '../../shared/write/writer.ts';
import { ordinalOf } from './id-list.ts';
import { readSnapshotRecords } from './json-records.ts';
import { locate, Problems, say } from './problems.ts';
import type { ValidSnapshot } from './validation.ts';
import { servedJson } from '../../shared/domain/served-json.ts';

/**
 * Pass 2 of an import (docs/contract.md, section 7): the snapshot, validated whole by pass 1
 * (validation.ts), as the desired state of the teams, users and tokens it names, written by the
 * table's writer steps (shared/write/steps.ts) under the writers' lock. Each part of each team that
 * differs from what the table holds is written beside the one readers use and switched to; what is
 * the same is not written at all. The projects and daemons of the lists that change are read from
 * the file again, which must be the file pass 1 validated.
 */

export type ImportProgress = Parameters<NonNullable<StepHooks['onProgress']>>[0];

export interface ImportOptions extends StepHooks {
  /** One line per event worth a line (waiting for the lock, a sweep that stopped). */
  log?: (line: string) => void;
  /** Wall-clock milliseconds: retention is measured with it. */
  clock?: () => number;
  lock?: Pick<LeaseOptions, 'leaseMs' | 'renewEveryMs'>;
}

/** What an import did: the snapshot's counts, and how many of its teams, projects and daemons it wrote. */
export interface ImportSummary {
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
  const lock = await acquireWriterLock(doc, tableName, 'import', { ...options.lock, onWait: log });
  const counts = {
    teams: snapshot.teams.length,
    items: snapshot.items,
    users: snapshot.users.length,
    tokens: snapshot.tokens.length,
  };
  try {
    const w: Writer = { doc, tableName, lock, clock, log };
    const plan = await readPlan(w, desiredState(snapshot), { startedAt: clock(), tokenOfAnotherUser: 'refuse' });
    if (plan.problems.length > 0) throw new ImportRejected(describe(plan.problems, snapshot));
    // Every step writes only what it has to: a snapshot that changes nothing writes nothing (a dead
    // writer's leftovers aside, which go whatever the snapshot says).
    const { itemsWritten } = await applyPlan(w, plan, (emit) => readItems(snapshot, emit), options).catch((error) => {
      throw error instanceof ItemsChanged ? new SnapshotChanged(error.message) : error;
    });
    await lock.release();
    return { ...counts, teamsChanged: plan.teams.length, itemsWritten };
  } catch (error) {
    // The import's own failure is the one to report; a lock not released expires by itself.
    await lock.release().catch(() => {});
    throw error;
  }
}

/** The snapshot as the state its teams, users and tokens should have. */
function desiredState(snapshot: ValidSnapshot): DesiredState {
  return {
    teams: snapshot.teams.map((team) => ({
      identity: { id: team.id, slug: team.slug, name: team.name },
      where: locate('teams', team.index, team.id),
      projects: { count: team.projectIds.length, fingerprint: team.projectsFingerprint },
      daemons: { count: team.daemonIds.length, fingerprint: team.daemonsFingerprint },
      finance: { json: team.financeJson, fingerprint: team.financeFingerprint },
      memberIds: team.memberIds,
    })),
    users: snapshot.users.map((user) => ({ id: user.id, name: user.name })),
    tokens: snapshot.tokens.map((token) => ({ ...token, where: locate('tokens', token.index) })),
  };
}

/** The plan's problems in the import's words, each naming the record of the snapshot it is about. */
function describe(problems: PlanProblem[], snapshot: ValidSnapshot): string[] {
  const said = new Problems();
  const userAt = (id: number) => snapshot.users.findIndex((user) => user.id === id);
  for (const problem of problems) {
    switch (problem.kind) {
      case 'slugTaken':
        said.add(say.slugTaken(problem.team.where, problem.team.identity.slug, problem.holder));
        break;
      case 'slugCycle':
        said.add(
          say.slugCycle(
            problem.team.where,
            problem.team.identity.slug,
            problem.holder.where,
            problem.holder.identity.slug,
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
 * Every project and daemon, from the file again, numbered by the ids pass 1 sorted. Pass 1 checked
 * every record of this file, and its fingerprint is checked again at the end, before any switch: a
 * file changed meanwhile can only leave garbage in a generation that is never switched to (and is
 * swept).
 */
async function readItems(snapshot: ValidSnapshot, emit: EmitItem): Promise<void> {
  await assertUnchanged(snapshot);
  const teamsById = new Map(snapshot.teams.map((team) => [team.id, team]));
  const read = await readSnapshotRecords(
    snapshot.path,
    (collection, _index, fields) => {
      if (collection !== 'projects' && collection !== 'daemons') return undefined;
      const project = collection === 'projects';
      const teamId = project ? fields.team_id : snapshot.environmentTeams.get(fields.environment_id as number);
      const team = teamsById.get(teamId as number);
      const ordinal = team ? ordinalOf(project ? team.projectIds : team.daemonIds, fields.id as number) : 0;
      if (!team || ordinal === 0) throw new SnapshotChanged(`one of its ${collection} was not validated`);
      return emit(team.id, collection, ordinal, servedJson(collection, fields));
    },
    new Problems(),
  );
  if (!read.readable || read.sha256 !== snapshot.sha256) throw new SnapshotChanged('its SHA-256 differs');
}

/** The file must still be the one pass 1 validated (its fingerprint is checked again in pass 2). */
async function assertUnchanged(snapshot: ValidSnapshot): Promise<void> {
  const { size, mtimeMs } = await stat(snapshot.path);
  if (size !== snapshot.bytes || mtimeMs !== snapshot.modifiedMs) {
    throw new SnapshotChanged('its size or modification time differs');
  }
}
