import { stat } from 'node:fs/promises';
import { hashToken } from '../../shared/api/bearer.ts';
import { addCost, type Cost, type FinanceSummary, SERVERS_LABEL } from '../../shared/domain/finance.ts';
import { type AnyRecord, type Collection, checkRecord, type RecordOf } from '../../shared/domain/records.ts';
import { servedJson } from '../../shared/domain/served-json.ts';
import { ListFingerprint } from '../../shared/write/fingerprint.ts';
import { financePart } from '../../shared/write/finance-part.ts';
import { IdHashList, repeatedIds } from './id-list.ts';
import { readSnapshotRecords } from './json-records.ts';
import { locate, Problems, say } from './problems.ts';

/**
 * Pass 1 of an import: the whole snapshot file is read as a stream (once more when a record names
 * one further down the file or a rule between records is broken, to name each record concerned)
 * and checked against every rule of docs/contract.md, section 7 before anything is written. What
 * it keeps is compact: the small collections (teams, users, tokens as hashes, environments,
 * servers, clients), each team's project and daemon ids in Float64Arrays (sorted at the end: pass 2
 * numbers each item by binary search), the fingerprint of each team's projects and daemons as served
 * (shared/write/fingerprint.ts: what lets the import write only the lists that change), and cost
 * sums as bigint. Never a whole project or daemon record.
 */

export interface SnapshotTeam {
  /** Its index in `teams`. */
  index: number;
  id: number;
  /** Absent for a team addressed by its id alone (Jetstream's stock teams have no slug). */
  slug?: string;
  name: string;
  /** Sorted, each with its item's hash at the same index (shared/write/desired.ts, WholeList). */
  projectIds: Float64Array;
  projectHashes: BigUint64Array;
  daemonIds: Float64Array;
  daemonHashes: BigUint64Array;
  /** The fingerprints of the projects and daemons as they are served (every item's JSON). */
  projectsFingerprint: string;
  daemonsFingerprint: string;
  finance: FinanceSummary;
  /** The finance response's fields as served, and their fingerprint. */
  financeJson: string;
  financeFingerprint: string;
  /** Users of the snapshot who list the team: its members, exactly. */
  memberIds: number[];
}

/** A user as the snapshot gives it, each team listed once. */
type SnapshotUser = RecordOf<'users'>;

interface SnapshotToken {
  index: number;
  userId: number;
  /** SHA-256 of the secret: the secret itself is not kept past validation. */
  hash: string;
  /** The Laravel Sanctum token id a migrated token keeps (an `<id>|<secret>` bearer must name it). */
  sanctumId?: number;
  name?: string;
  abilities: string[];
  expiresAt: string | null;
  /** Given as a plain-text `token` (development data: its secret is in the file). */
  plain: boolean;
}

/** A snapshot file that passed pass 1, and what pass 2 needs to write it. */
export type ValidSnapshot = ReturnType<ReturnType<typeof snapshotIndex>['finish']> & {
  path: string;
  /** The file as validated: pass 2 checks it has not changed. */
  sha256: string;
  bytes: number;
  modifiedMs: number;
};

/** A rejection lists at most 50 problems (then `… and N more problems`); `count` is all of them. */
export type Validation = { ok: true; snapshot: ValidSnapshot } | { ok: false; problems: string[]; count: number };

/**
 * Pass 1: validates the snapshot file at `path` whole; `onBytes` is told the bytes read so far
 * (the progress display's "validating").
 */
export async function validateSnapshotFile(
  path: string,
  onBytes?: (bytes: number, total: number) => void,
): Promise<Validation> {
  const { size, mtimeMs } = await stat(path);
  const problems = new Problems();
  const index = snapshotIndex(problems);
  const read = await readSnapshotRecords(path, index.record, problems, (bytes) => onBytes?.(bytes, size));
  if (read.readable) {
    const kept = index.finish();
    if (index.broken) {
      await readSnapshotRecords(path, index.record, new Problems());
    }
    if (problems.count === 0)
      return { ok: true, snapshot: { path, sha256: read.sha256, bytes: read.bytes, modifiedMs: mtimeMs, ...kept } };
  }
  return { ok: false, problems: problems.lines(), count: problems.count };
}

type Kept = 'teams' | 'users' | 'environments' | 'servers' | 'clients';
/** A team record as pass 1 keeps it: where it is in the file, its id, slug and name. */
type KeptTeam = Pick<SnapshotTeam, 'index' | 'id' | 'slug' | 'name'>;

/**
 * The visitor of pass 1: checks each record, and keeps what the rules between records need: the
 * small collections, project ids and cost sums by the team they name, daemon ids by the environment
 * they name (its team may come later in the file).
 */
function snapshotIndex(problems: Problems) {
  /** The small collections by id; of an environment, a server or a client, its team. */
  const kept = {
    teams: new Map<number, KeptTeam>(),
    users: new Map<number, SnapshotUser>(),
    environments: new Map<number, number>(),
    servers: new Map<number, number>(),
    clients: new Map<number, number>(),
  };
  const slugs = new Set<string>();
  const tokens: SnapshotToken[] = [];
  const hashes = new Set<string>();
  /** Sanctum ids of the tokens that give one. */
  const sanctumIds = new Set<number>();
  /** Ids of records that were malformed: a reference to one is not reported a second time. */
  const malformed: Record<Kept, Set<number>> = {
    teams: new Set(),
    users: new Set(),
    environments: new Set(),
    servers: new Set(),
    clients: new Set(),
  };
  /**
   * What each team accumulates while the file is read (under any team id a record names): ids (a
   * double array of V8, 8 bytes an id), the lists' fingerprints, and cost sums by label and currency.
   */
  const buckets = new Map<
    number,
    {
      projectIds: IdHashList;
      daemonIds: IdHashList;
      projects: ListFingerprint;
      daemons: ListFingerprint;
      costs: Map<string, Cost>;
    }
  >();
  /** Daemons by the environment they name (its team may come later in the file). */
  const daemonsByEnvironment = new Map<number, { ids: IdHashList; fingerprint: ListFingerprint }>();
  let repeated = { projects: new Set<number>(), daemons: new Set<number>() };
  const seen = { projects: new Set<number>(), daemons: new Set<number>() };
  /**
   * Whether a record named one not read yet (or a client of another team), or a project or daemon
   * id repeats: the file is then read once more, every record known, to name each that breaks a rule.
   */
  let broken = false;
  /** Once the file has been read (finish): any later record is the second reading's. */
  let finished = false;

  function record(
    collection: Collection,
    index: number,
    fields: Record<string, unknown>,
    keyProblems: unknown[],
  ): void {
    const checked = checkRecord(collection, fields);
    // Said only for a record with a problem: most have none, and a place costs an escaped string.
    const where = () => locate(collection, index, fields.id);
    if (finished) {
      if (checked.ok && keyProblems.length === 0) nameBrokenReferences(collection, where(), checked.record);
      return;
    }
    if (!checked.ok || keyProblems.length > 0) {
      // Key problems are reported already. Either way the record is not used, but its id is
      // known: references to it are not reported as unresolved on top of its own problem.
      if (!checked.ok) for (const problem of checked.problems) problems.add(`${where()}: ${problem}`);
      if (collection in malformed && typeof fields.id === 'number') malformed[collection as Kept].add(fields.id);
      return;
    }
    const { record } = checked;
    const id = record.id!;
    if (referencesOf(collection, record).some(([, kind, referred]) => !has(kind, referred))) broken = true;
    if (collection in kept && kept[collection as Kept].has(id)) {
      problems.add(say.duplicateId(where()));
      return;
    }
    switch (collection) {
      case 'teams':
        if (record.slug !== undefined && slugs.has(record.slug)) {
          problems.add(say.duplicateSlug(where(), record.slug));
          return;
        }
        kept.teams.set(id, { index, id, slug: record.slug, name: record.name! });
        if (record.slug !== undefined) slugs.add(record.slug);
        return;
      case 'users':
        kept.users.set(id, { id, name: record.name, teams: [...new Set(record.teams!)] });
        return;
      case 'tokens': {
        // A secret given plain or by its hash (a token migrated from Sanctum) is one secret either way.
        const hash = record.token_sha256 ?? hashToken(record.token!);
        if (hashes.has(hash)) {
          problems.add(say.duplicateSecret(where()));
          return;
        }
        if (record.id !== undefined && sanctumIds.has(id)) {
          problems.add(say.duplicateId(where()));
          return;
        }
        hashes.add(hash);
        if (record.id !== undefined) sanctumIds.add(id);
        tokens.push({
          index,
          userId: record.user_id!,
          hash,
          sanctumId: record.id,
          name: record.name,
          abilities: [...new Set(record.abilities!)],
          expiresAt: record.expires_at!,
          plain: record.token !== undefined,
        });
        return;
      }
      case 'environments':
      case 'servers':
      case 'clients':
        kept[collection].set(id, record.team_id!);
        if (collection === 'servers')
          addCost(bucketOf(record.team_id!).costs, {
            label: SERVERS_LABEL,
            currency: record.currency!,
            units: record.monthly_cost!,
          });
        return;
      case 'projects': {
        const bucket = bucketOf(record.team_id!);
        bucket.projectIds.push(id, bucket.projects.add(servedJson('projects', record)));
        // A client of another team (or not read yet) is named on the second reading.
        if (record.client_id !== null && kept.clients.get(record.client_id!) !== record.team_id) broken = true;
        return;
      }
      case 'daemons': {
        const environment = mapped(daemonsByEnvironment, record.environment_id!, () => ({
          ids: new IdHashList(),
          fingerprint: new ListFingerprint(),
        }));
        environment.ids.push(id, environment.fingerprint.add(servedJson('daemons', record)));
        return;
      }
      case 'costs':
        addCost(bucketOf(record.team_id!).costs, {
          label: record.label!,
          currency: record.currency!,
          units: record.amount!,
        });
    }
  }

  function bucketOf(teamId: number) {
    return mapped(buckets, teamId, () => ({
      projectIds: new IdHashList(),
      daemonIds: new IdHashList(),
      projects: new ListFingerprint(),
      daemons: new ListFingerprint(),
      costs: new Map(),
    }));
  }

  function has(kind: Kept, id: number): boolean {
    return kept[kind].has(id) || malformed[kind].has(id);
  }

  function finish() {
    const environmentTeams = kept.environments;
    for (const [environmentId, teamId] of environmentTeams) {
      const environment = daemonsByEnvironment.get(environmentId);
      if (!environment) continue;
      const bucket = bucketOf(teamId);
      bucket.daemonIds.append(environment.ids);
      bucket.daemons.merge(environment.fingerprint);
    }
    const teams = [...kept.teams.values()].map((team) => finishTeam(team));
    const byId = new Map(teams.map((team) => [team.id, team]));
    for (const user of kept.users.values()) {
      for (const teamId of user.teams) byId.get(teamId)?.memberIds.push(user.id);
    }
    repeated = {
      projects: repeatedIds(teams.map((t) => t.projectIds)),
      daemons: repeatedIds(teams.map((t) => t.daemonIds)),
    };
    if (repeated.projects.size + repeated.daemons.size > 0) broken = true;
    finished = true;
    return {
      teams,
      users: [...kept.users.values()],
      tokens,
      /** Environment id to team id: a daemon belongs to its environment's team. */
      environmentTeams,
      /** Projects and daemons, all teams together. */
      items: teams.reduce((n, t) => n + t.projectIds.length + t.daemonIds.length, 0),
    };
  }

  function nameBrokenReferences(collection: Collection, where: string, record: AnyRecord): void {
    for (const [field, kind, id] of referencesOf(collection, record)) {
      if (!has(kind, id)) problems.add(say.notInSnapshot(where, field, id, REFERRED[kind]));
    }
    const owner = collection === 'projects' ? kept.clients.get(record.client_id!) : undefined;
    if (owner !== undefined && owner !== record.team_id)
      problems.add(say.clientOfOtherTeam(where, record.client_id!, owner, record.team_id!));
    if (collection === 'projects' || collection === 'daemons') {
      const id = record.id!;
      if (!repeated[collection].has(id)) return;
      if (seen[collection].has(id)) problems.add(say.duplicateId(where));
      seen[collection].add(id);
    }
  }

  function finishTeam(team: KeptTeam): SnapshotTeam {
    const bucket = bucketOf(team.id);
    const finance = financePart(team, bucket.costs.values());
    const where = locate('teams', team.index, team.id);
    for (const problem of finance.problems) problems.add(`${where}: ${problem}`);
    return {
      ...team,
      ...projectsOf(bucket.projectIds.sorted()),
      ...daemonsOf(bucket.daemonIds.sorted()),
      projectsFingerprint: bucket.projects.value(),
      daemonsFingerprint: bucket.daemons.value(),
      finance: finance.summary,
      financeJson: finance.json,
      financeFingerprint: finance.fingerprint,
      memberIds: [],
    };
  }

  return {
    record,
    finish,
    /** Whether the file must be read once more (after finish) to name the records that break a rule. */
    get broken() {
      return broken;
    },
  };
}

/**
 * The ids a valid record refers to, each with the field that names it (a project's client must
 * also be of the project's team).
 */
function referencesOf(collection: Collection, record: AnyRecord): [field: string, kind: Kept, id: number][] {
  const references: [string, Kept, number][] = [];
  if (collection === 'users')
    for (const [i, teamId] of record.teams!.entries()) references.push([`teams[${i}]`, 'teams', teamId]);
  if (collection === 'tokens') references.push(['user_id', 'users', record.user_id!]);
  if ('team_id' in record) references.push(['team_id', 'teams', record.team_id!]);
  if (collection === 'projects' && record.client_id !== null)
    references.push(['client_id', 'clients', record.client_id!]);
  if (collection === 'daemons')
    references.push(
      ['environment_id', 'environments', record.environment_id!],
      ['server_id', 'servers', record.server_id!],
    );
  return references;
}

const REFERRED: Record<Kept, string> = {
  teams: 'a team',
  users: 'a user',
  environments: 'an environment',
  servers: 'a server',
  clients: 'a client',
};

function mapped<K, V>(map: Map<K, V>, key: K, create: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = create();
    map.set(key, value);
  }
  return value;
}

const projectsOf = ({ ids, hashes }: ReturnType<IdHashList['sorted']>) => ({ projectIds: ids, projectHashes: hashes });
const daemonsOf = ({ ids, hashes }: ReturnType<IdHashList['sorted']>) => ({ daemonIds: ids, daemonHashes: hashes });
