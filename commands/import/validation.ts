import { stat } from 'node:fs/promises';
import { hashToken } from '../../shared/auth/token.ts';
import { formatAmount } from './decimal.ts';
import { addCost, financeFieldsJson, SERVERS_LABEL, summarizeCosts, type Cost, type FinanceSummary } from './finance.ts';
import { repeatedIds } from './id-list.ts';
import { readSnapshotRecords, type RecordVisitor } from './json-records.ts';
import { AMOUNT_LIMIT_UNITS, checkRecord, LIMITS, type AnyRecord, type Collection, type RecordOf } from './snapshot.ts';
import { locate, Problems, say } from './problems.ts';
import { financeItem } from './stored-items.ts';
import { DYNAMODB_ITEM_BYTES, itemSize } from '../store/item-size.ts';

/**
 * Pass 1 of an import: the whole snapshot file is read as a stream (once more only to name the
 * records that break a rule between records) and checked against every rule of docs/contract.md,
 * section 7 before anything is written. What it keeps is compact: the small collections (teams,
 * users, tokens as hashes, environments, servers, clients), each team's project and daemon ids in
 * Float64Arrays (sorted at the end: pass 2 numbers each item by binary search), and cost sums as
 * bigint. Never a whole project or daemon record.
 */

export interface SnapshotTeam {
  /** Its index in `teams`. */
  index: number;
  id: number;
  slug: string;
  name: string;
  /** Sorted; a project's ordinal is its 1-based position here. */
  projectIds: Float64Array;
  daemonIds: Float64Array;
  finance: FinanceSummary;
  /** Users of the snapshot who list the team: its members, exactly. */
  memberIds: number[];
}

/** A user as the snapshot gives it, each team listed once. */
export type SnapshotUser = RecordOf<'users'>;

export interface SnapshotToken {
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
export type ValidSnapshot = ReturnType<SnapshotIndex['finish']> & {
  path: string;
  /** The file as validated: pass 2 checks it has not changed. */
  sha256: string;
  bytes: number;
  modifiedMs: number;
};

/** A rejection lists at most 50 problems (then `… and N more problems`); `count` is all of them. */
export type Validation = { ok: true; snapshot: ValidSnapshot } | { ok: false; problems: string[]; count: number };

/** Pass 1: validates the snapshot file at `path` whole; `onBytes` is told the bytes read so far (the progress display's "validating"). */
export async function validateSnapshotFile(path: string, onBytes?: (bytes: number, total: number) => void): Promise<Validation> {
  const { size, mtimeMs } = await stat(path);
  const problems = new Problems();
  const index = new SnapshotIndex(problems);
  const read = await readSnapshotRecords(path, index, problems, (bytes) => onBytes?.(bytes, size));
  if (read.readable) {
    const kept = index.finish();
    if (index.broken) {
      index.rechecking = true;
      await readSnapshotRecords(path, index, new Problems());
    }
    if (problems.count === 0) return { ok: true, snapshot: { path, sha256: read.sha256, bytes: read.bytes, modifiedMs: mtimeMs, ...kept } };
  }
  return { ok: false, problems: problems.lines(), count: problems.count };
}

type Kept = 'teams' | 'users' | 'environments' | 'servers' | 'clients';
type TeamHead = Pick<SnapshotTeam, 'index' | 'id' | 'slug' | 'name'>;

/**
 * The visitor of pass 1: checks each record, and keeps what the rules between records need: the
 * small collections, project ids and cost sums by the team they name, daemon ids by the environment
 * they name (its team may come later in the file).
 */
class SnapshotIndex implements RecordVisitor {
  private readonly problems: Problems;
  /** The small collections by id; of an environment, a server or a client, its team. */
  private readonly kept = {
    teams: new Map<number, TeamHead>(),
    users: new Map<number, SnapshotUser>(),
    environments: new Map<number, number>(),
    servers: new Map<number, number>(),
    clients: new Map<number, number>(),
  };
  private readonly slugs = new Set<string>();
  private readonly tokens: SnapshotToken[] = [];
  private readonly hashes = new Set<string>();
  /** Sanctum ids of the tokens that give one. */
  private readonly sanctumIds = new Set<number>();
  /** Ids of records that were malformed: a reference to one is not reported a second time. */
  private readonly malformed: Record<Kept, Set<number>> = { teams: new Set(), users: new Set(), environments: new Set(), servers: new Set(), clients: new Set() };
  /** What each team accumulates while the file is read (under any team id a record names): ids (a double array of V8, 8 bytes an id), and cost sums by label and currency. */
  private readonly buckets = new Map<number, { projectIds: number[]; daemonIds: number[]; costs: Map<string, Cost> }>();
  private readonly daemonsByEnvironment = new Map<number, number[]>();
  private repeated = { projects: new Set<number>(), daemons: new Set<number>() };
  private readonly seen = { projects: new Set<number>(), daemons: new Set<number>() };

  constructor(problems: Problems) {
    this.problems = problems;
  }

  /**
   * Whether a record named one not read yet (or a client of another team), or a project or daemon
   * id repeats: the file is then read once more, every record known, to name each that breaks a rule.
   */
  broken = false;
  /** Set for that second reading. */
  rechecking = false;

  record(collection: Collection, index: number, fields: Record<string, unknown>, keyProblems: unknown[]): void {
    const checked = checkRecord(collection, fields);
    const where = locate(collection, index, fields.id);
    if (this.rechecking) {
      if (checked.ok && keyProblems.length === 0) this.nameBrokenReferences(collection, where, checked.record);
      return;
    }
    if (!checked.ok || keyProblems.length > 0) {
      // Key problems are reported already. Either way the record is not used, but its id is
      // known: references to it are not reported as unresolved on top of its own problem.
      if (!checked.ok) for (const problem of checked.problems) this.problems.add(`${where}: ${problem}`);
      if (collection in this.malformed && typeof fields.id === 'number') this.malformed[collection as Kept].add(fields.id);
      return;
    }
    const { record } = checked;
    const id = record.id!;
    if (referencesOf(collection, record).some(([, kind, referred]) => !this.has(kind, referred))) this.broken = true;
    const duplicate = () => this.problems.add(say.duplicateId(where));
    if (collection in this.kept && this.kept[collection as Kept].has(id)) return duplicate();
    switch (collection) {
      case 'teams':
        if (this.slugs.has(record.slug!)) return this.problems.add(say.duplicateSlug(where, record.slug!));
        this.kept.teams.set(id, { index, id, slug: record.slug!, name: record.name! });
        this.slugs.add(record.slug!);
        return;
      case 'users':
        this.kept.users.set(id, { id, name: record.name, teams: [...new Set(record.teams!)] });
        return;
      case 'tokens': {
        // A secret given plain or by its hash (a token migrated from Sanctum) is one secret either way.
        const hash = record.token_sha256 ?? hashToken(record.token!);
        if (this.hashes.has(hash)) return this.problems.add(say.duplicateSecret(where));
        if (record.id !== undefined && this.sanctumIds.has(id)) return duplicate();
        this.hashes.add(hash);
        if (record.id !== undefined) this.sanctumIds.add(id);
        this.tokens.push({
          index, userId: record.user_id!, hash, sanctumId: record.id, name: record.name, abilities: [...new Set(record.abilities!)],
          expiresAt: record.expires_at!, plain: record.token !== undefined,
        });
        return;
      }
      case 'environments':
      case 'servers':
      case 'clients':
        this.kept[collection].set(id, record.team_id!);
        if (collection === 'servers') addCost(this.bucket(record.team_id!).costs, { label: SERVERS_LABEL, currency: record.currency!, units: record.monthly_cost! });
        return;
      case 'projects':
        this.bucket(record.team_id!).projectIds.push(id);
        // A client of another team (or not read yet) is named on the second reading.
        if (record.client_id !== null && this.kept.clients.get(record.client_id!) !== record.team_id) this.broken = true;
        return;
      case 'daemons':
        mapped(this.daemonsByEnvironment, record.environment_id!, () => []).push(id);
        return;
      case 'costs':
        addCost(this.bucket(record.team_id!).costs, { label: record.label!, currency: record.currency!, units: record.amount! });
    }
  }

  private bucket(teamId: number) {
    return mapped(this.buckets, teamId, () => ({ projectIds: [], daemonIds: [], costs: new Map() }));
  }

  private has(kind: Kept, id: number): boolean {
    return this.kept[kind].has(id) || this.malformed[kind].has(id);
  }

  // ---- the end of the file ------------------------------------------------------------

  finish() {
    const environmentTeams = this.kept.environments;
    for (const [environmentId, teamId] of environmentTeams) {
      for (const id of this.daemonsByEnvironment.get(environmentId) ?? []) this.bucket(teamId).daemonIds.push(id);
    }
    const teams = [...this.kept.teams.values()].map((team) => this.finishTeam(team));
    const byId = new Map(teams.map((team) => [team.id, team]));
    for (const user of this.kept.users.values()) {
      for (const teamId of user.teams) byId.get(teamId)?.memberIds.push(user.id);
    }
    this.repeated = { projects: repeatedIds(teams.map((t) => t.projectIds)), daemons: repeatedIds(teams.map((t) => t.daemonIds)) };
    if (this.repeated.projects.size + this.repeated.daemons.size > 0) this.broken = true;
    return {
      teams, users: [...this.kept.users.values()], tokens: this.tokens,
      /** Environment id to team id: a daemon belongs to its environment's team. */
      environmentTeams,
      /** Projects and daemons, all teams together. */
      items: teams.reduce((n, t) => n + t.projectIds.length + t.daemonIds.length, 0),
    };
  }

  private nameBrokenReferences(collection: Collection, where: string, record: AnyRecord): void {
    for (const [field, kind, id] of referencesOf(collection, record)) {
      if (!this.has(kind, id)) this.problems.add(say.notInSnapshot(where, field, id, REFERRED[kind]));
    }
    const owner = collection === 'projects' ? this.kept.clients.get(record.client_id!) : undefined;
    if (owner !== undefined && owner !== record.team_id) this.problems.add(say.clientOfOtherTeam(where, record.client_id!, owner, record.team_id!));
    if (collection === 'projects' || collection === 'daemons') {
      const id = record.id!;
      if (!this.repeated[collection].has(id)) return;
      if (this.seen[collection].has(id)) this.problems.add(say.duplicateId(where));
      this.seen[collection].add(id);
    }
  }

  private finishTeam(team: TeamHead): SnapshotTeam {
    const bucket = this.bucket(team.id);
    const finance = summarizeCosts(bucket.costs.values());
    const where = locate('teams', team.index, team.id);
    const limit = LIMITS.amountBelow.toLocaleString('en');
    for (const total of finance.totals) {
      if (total.units >= AMOUNT_LIMIT_UNITS) this.problems.add(say.teamTotalTooLarge(where, total.currency, formatAmount(total.units), limit));
    }
    if (finance.grandTotal >= AMOUNT_LIMIT_UNITS) this.problems.add(say.teamGrandTotalTooLarge(where, formatAmount(finance.grandTotal), limit));
    // DynamoDB's limit, in bytes as DynamoDB counts them: the finance item is the one that grows
    // (both its copies, and the small heads, stay far within a transaction's 4 MB).
    const financeBytes = itemSize(financeItem(team, financeFieldsJson(finance)));
    if (financeBytes > DYNAMODB_ITEM_BYTES) this.problems.add(say.financeTooLarge(where, financeBytes));
    return { ...team, projectIds: Float64Array.from(bucket.projectIds).sort(), daemonIds: Float64Array.from(bucket.daemonIds).sort(), finance, memberIds: [] };
  }
}

/** The ids a valid record refers to, each with the field that names it (a project's client must also be of the project's team). */
function referencesOf(collection: Collection, record: AnyRecord): [field: string, kind: Kept, id: number][] {
  const references: [string, Kept, number][] = [];
  if (collection === 'users') record.teams!.forEach((teamId, i) => references.push([`teams[${i}]`, 'teams', teamId]));
  if (collection === 'tokens') references.push(['user_id', 'users', record.user_id!]);
  if ('team_id' in record) references.push(['team_id', 'teams', record.team_id!]);
  if (collection === 'projects' && record.client_id !== null) references.push(['client_id', 'clients', record.client_id!]);
  if (collection === 'daemons') references.push(['environment_id', 'environments', record.environment_id!], ['server_id', 'servers', record.server_id!]);
  return references;
}

const REFERRED: Record<Kept, string> = { teams: 'a team', users: 'a user', environments: 'an environment', servers: 'a server', clients: 'a client' };

function mapped<K, V>(map: Map<K, V>, key: K, create: () => V): V {
  let value = map.get(key);
  if (value === undefined) map.set(key, (value = create()));
  return value;
}
