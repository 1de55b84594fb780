import { stat } from 'node:fs/promises';
import { hashToken } from '../../shared/auth/token.ts';
import { formatAmount } from './decimal.ts';
import { financeFieldsJson, SERVERS_LABEL, summarizeCosts, type Cost, type FinanceSummary } from './finance.ts';
import { IdList, repeatedValues } from './id-list.ts';
import { readSnapshotRecords, type RecordVisitor } from './json-records.ts';
import { AMOUNT_LIMIT_UNITS, checkRecord, LIMITS, type Collection, type RecordOf } from './snapshot.ts';
import { locate, Problems, say } from './problems.ts';
import { financeItem, SWITCH_ACTIONS_MAX, switchTransactionBytes } from './stored-items.ts';
import { DYNAMODB_LIMITS, itemSize } from '../store/item-size.ts';

/**
 * Pass 1 of an import: the whole snapshot file is read once, as a stream, and checked against
 * every rule of docs/contract.md, section 7 before anything is written. What it keeps is compact: the
 * small collections (teams, users, tokens as hashes, environments, servers, clients), each
 * team's project and daemon ids in Float64Arrays (sorted at the end: pass 2 numbers each item
 * by binary search), references still to be resolved as numbers, and cost sums as bigint. Never
 * a whole project or daemon record.
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

export interface SnapshotUser {
  id: number;
  name?: string;
  /** Each team once. */
  teams: number[];
}

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
}

/** A snapshot file that passed pass 1, and what pass 2 needs to write it. */
export interface ValidSnapshot {
  path: string;
  /** The file as validated: pass 2 checks it has not changed. */
  sha256: string;
  bytes: number;
  modifiedMs: number;
  teams: SnapshotTeam[];
  users: SnapshotUser[];
  tokens: SnapshotToken[];
  /** Environment id to team id: a daemon belongs to its environment's team. */
  environmentTeams: Map<number, number>;
  /** Projects and daemons, all teams together. */
  items: number;
}

/** A rejection lists at most 50 problems (then `… and N more problems`); `count` is all of them. */
export type Validation = { ok: true; snapshot: ValidSnapshot } | { ok: false; problems: string[]; count: number };

export interface ValidateOptions {
  /** Bytes of the file read so far (the progress display's "validating"). */
  onBytes?: (bytes: number, total: number) => void;
}

/** Pass 1: validates the snapshot file at `path` whole. */
export async function validateSnapshotFile(path: string, options: ValidateOptions = {}): Promise<Validation> {
  const { size, mtimeMs } = await stat(path);
  const problems = new Problems();
  const index = new SnapshotIndex(problems);
  const read = await readSnapshotRecords(path, index, problems, { onBytes: (bytes) => options.onBytes?.(bytes, size) });
  if (!read.readable) return { ok: false, problems: problems.lines(), count: problems.count };
  const result = index.finish();
  if (result.repeated.projects.length + result.repeated.daemons.length > 0) await locateRepeats(path, result.repeated, problems);
  if (problems.count > 0) return { ok: false, problems: problems.lines(), count: problems.count };
  return {
    ok: true,
    snapshot: {
      path, sha256: read.sha256, bytes: read.bytes, modifiedMs: mtimeMs,
      teams: result.teams, users: result.users, tokens: result.tokens,
      environmentTeams: result.environmentTeams,
      items: result.teams.reduce((n, t) => n + t.projectIds.length + t.daemonIds.length, 0),
    },
  };
}

/** What a team accumulates while the file is read (under any team id a record names). */
class TeamBucket {
  readonly projectIds = new IdList();
  readonly daemonIds = new IdList();
  /** Sums by label and currency, in 1/10,000ths. */
  readonly costs = new Map<string, Cost>();

  addCost(label: string, currency: string, units: bigint): void {
    const key = `${label}\u0000${currency}`;
    const line = this.costs.get(key);
    if (line) line.units += units;
    else this.costs.set(key, { label, currency, units });
  }
}

/** References that could not be resolved when their record was read, kept as numbers. */
class PendingRefs {
  private readonly indexes = new IdList();
  private readonly ids = new IdList();
  private readonly values = new IdList();
  private readonly extras = new IdList();

  add(index: number, id: number, value: number, extra = 0): void {
    this.indexes.push(index);
    this.ids.push(id);
    this.values.push(value);
    this.extras.push(extra);
  }

  *entries(): Generator<{ index: number; id: number; value: number; extra: number }> {
    const ids = this.ids.toArray();
    const values = this.values.toArray();
    const extras = this.extras.toArray();
    let i = 0;
    for (const index of this.indexes) {
      yield { index, id: ids[i]!, value: values[i]!, extra: extras[i]! };
      i++;
    }
  }
}

interface Owned {
  index: number;
  teamId: number;
}

/** The visitor of pass 1: checks each record, and keeps what the rules between records need. */
class SnapshotIndex implements RecordVisitor {
  private readonly problems: Problems;
  private readonly complete = new Set<Collection>();
  private readonly teams = new Map<number, { index: number; id: number; slug: string; name: string }>();
  private readonly slugs = new Set<string>();
  private readonly users = new Map<number, SnapshotUser>();
  private readonly tokens: SnapshotToken[] = [];
  private readonly hashes = new Set<string>();
  /** Sanctum ids of the tokens that give one. */
  private readonly sanctumIds = new Set<number>();
  private readonly environments = new Map<number, Owned>();
  private readonly servers = new Map<number, Owned>();
  private readonly clients = new Map<number, Owned>();
  /** Ids of records that were malformed: a reference to one is not reported a second time. */
  private readonly malformed = { teams: new Set<number>(), users: new Set<number>(), environments: new Set<number>(), servers: new Set<number>(), clients: new Set<number>() };
  private readonly buckets = new Map<number, TeamBucket>();
  /** Each reference still open, by what it refers to. */
  private readonly pending = {
    team: new Map<Collection, PendingRefs>(),
    user: new PendingRefs(),
    client: new PendingRefs(),
    server: new PendingRefs(),
  };
  /** Daemons whose environment was not read yet: its id (and so its team) comes later. */
  private readonly daemonsAwaitingEnvironment = new Map<number, { ids: IdList; indexes: IdList }>();

  constructor(problems: Problems) {
    this.problems = problems;
  }

  collectionEnd(collection: Collection): void {
    this.complete.add(collection);
  }

  record(collection: Collection, index: number, fields: Record<string, unknown>, keyProblems: unknown[]): void {
    const checked = checkRecord(collection, fields);
    const where = locate(collection, index, fields.id);
    if (!checked.ok || keyProblems.length > 0) {
      // Key problems are reported already. Either way the record is not used, but its id is
      // known: references to it are not reported as unresolved on top of its own problem.
      if (!checked.ok) for (const problem of checked.problems) this.problems.add(`${where}: ${problem}`);
      if (collection in this.malformed && typeof fields.id === 'number') this.malformed[collection as keyof typeof this.malformed].add(fields.id);
      return;
    }
    switch (collection) {
      case 'teams': return this.team(index, where, checked.record as RecordOf<'teams'>);
      case 'users': return this.user(index, where, checked.record as RecordOf<'users'>);
      case 'tokens': return this.token(index, where, checked.record as RecordOf<'tokens'>);
      case 'environments': this.owned(this.environments, 'environments', index, where, checked.record as RecordOf<'environments'>); return;
      case 'servers': return this.server(index, where, checked.record as RecordOf<'servers'>);
      case 'clients': this.owned(this.clients, 'clients', index, where, checked.record as RecordOf<'clients'>); return;
      case 'projects': return this.project(index, checked.record as RecordOf<'projects'>);
      case 'daemons': return this.daemon(index, checked.record as RecordOf<'daemons'>);
      case 'costs': return this.cost(index, checked.record as RecordOf<'costs'>);
    }
  }

  private team(index: number, where: string, team: RecordOf<'teams'>): void {
    if (this.teams.has(team.id)) return this.problems.addRelation(say.duplicateId(where));
    if (this.slugs.has(team.slug)) return this.problems.addRelation(say.duplicateSlug(where, team.slug));
    this.teams.set(team.id, { index, id: team.id, slug: team.slug, name: team.name });
    this.slugs.add(team.slug);
  }

  private user(index: number, where: string, user: RecordOf<'users'>): void {
    if (this.users.has(user.id)) return this.problems.addRelation(say.duplicateId(where));
    const teams = [...new Set(user.teams)];
    this.users.set(user.id, { id: user.id, name: user.name, teams });
    user.teams.forEach((teamId, j) => this.refer('team', 'users', index, user.id, teamId, `teams[${j}]`));
  }

  private token(index: number, where: string, token: RecordOf<'tokens'>): void {
    const hash = token.token_sha256 ?? hashToken(token.token!);
    if (this.hashes.has(hash)) return this.problems.addRelation(say.duplicateSecret(where));
    if (token.id !== undefined && this.sanctumIds.has(token.id)) return this.problems.addRelation(say.duplicateId(where));
    this.hashes.add(hash);
    if (token.id !== undefined) this.sanctumIds.add(token.id);
    this.tokens.push({
      index, userId: token.user_id, hash, sanctumId: token.id, name: token.name, abilities: [...new Set(token.abilities)], expiresAt: token.expires_at,
    });
    this.refer('user', 'tokens', index, NaN, token.user_id, 'user_id');
  }

  private owned(map: Map<number, Owned>, collection: Collection, index: number, where: string, record: { id: number; team_id: number }): boolean {
    if (map.has(record.id)) {
      this.problems.addRelation(say.duplicateId(where));
      return false;
    }
    map.set(record.id, { index, teamId: record.team_id });
    this.refer('team', collection, index, record.id, record.team_id, 'team_id');
    if (collection === 'environments') this.placeAwaitingDaemons(record.id, record.team_id);
    return true;
  }

  private server(index: number, where: string, server: RecordOf<'servers'>): void {
    if (this.owned(this.servers, 'servers', index, where, server)) this.bucket(server.team_id).addCost(SERVERS_LABEL, server.currency, server.monthly_cost);
  }

  private project(index: number, project: RecordOf<'projects'>): void {
    this.bucket(project.team_id).projectIds.push(project.id);
    this.refer('team', 'projects', index, project.id, project.team_id, 'team_id');
    if (project.client_id !== null) this.referClient(index, project.id, project.client_id, project.team_id);
  }

  private daemon(index: number, daemon: RecordOf<'daemons'>): void {
    const environment = this.environments.get(daemon.environment_id);
    if (environment) this.bucket(environment.teamId).daemonIds.push(daemon.id);
    else if (this.complete.has('environments')) this.unresolved('daemons', index, daemon.id, 'environment_id', daemon.environment_id);
    else {
      let awaiting = this.daemonsAwaitingEnvironment.get(daemon.environment_id);
      if (!awaiting) this.daemonsAwaitingEnvironment.set(daemon.environment_id, (awaiting = { ids: new IdList(), indexes: new IdList() }));
      awaiting.ids.push(daemon.id);
      awaiting.indexes.push(index);
    }
    this.refer('server', 'daemons', index, daemon.id, daemon.server_id, 'server_id');
  }

  private cost(index: number, cost: RecordOf<'costs'>): void {
    this.bucket(cost.team_id).addCost(cost.label, cost.currency, cost.amount);
    this.refer('team', 'costs', index, NaN, cost.team_id, 'team_id');
  }

  private bucket(teamId: number): TeamBucket {
    let bucket = this.buckets.get(teamId);
    if (!bucket) this.buckets.set(teamId, (bucket = new TeamBucket()));
    return bucket;
  }

  private placeAwaitingDaemons(environmentId: number, teamId: number): void {
    const awaiting = this.daemonsAwaitingEnvironment.get(environmentId);
    if (!awaiting) return;
    const bucket = this.bucket(teamId);
    for (const id of awaiting.ids) bucket.daemonIds.push(id);
    this.daemonsAwaitingEnvironment.delete(environmentId);
  }

  // ---- references ----------------------------------------------------------------------

  private static readonly TARGET: Record<'team' | 'user' | 'server', Collection> = { team: 'teams', user: 'users', server: 'servers' };

  private has(target: 'team' | 'user' | 'server' | 'client', id: number): boolean {
    switch (target) {
      case 'team': return this.teams.has(id) || this.malformed.teams.has(id);
      case 'user': return this.users.has(id) || this.malformed.users.has(id);
      case 'server': return this.servers.has(id) || this.malformed.servers.has(id);
      case 'client': return this.clients.has(id) || this.malformed.clients.has(id);
    }
  }

  /** Checks a reference now when it can be, or keeps it (as numbers) for the end of the file. */
  private refer(target: 'team' | 'user' | 'server', collection: Collection, index: number, id: number, value: number, field: string): void {
    if (this.has(target, value)) return;
    if (this.complete.has(SnapshotIndex.TARGET[target])) return this.unresolved(collection, index, id, field, value);
    if (target === 'team') {
      let refs = this.pending.team.get(collection);
      if (!refs) this.pending.team.set(collection, (refs = new PendingRefs()));
      // users' team references keep their position in `teams` in `extra`.
      refs.add(index, id, value, field.startsWith('teams[') ? Number(field.slice(6, -1)) : -1);
    } else {
      this.pending[target].add(index, id, value);
    }
  }

  private referClient(index: number, projectId: number, clientId: number, teamId: number): void {
    const client = this.clients.get(clientId);
    if (client) return this.checkClientTeam(index, projectId, clientId, client.teamId, teamId);
    if (this.malformed.clients.has(clientId)) return;
    if (this.complete.has('clients')) return this.unresolved('projects', index, projectId, 'client_id', clientId);
    this.pending.client.add(index, projectId, clientId, teamId);
  }

  private checkClientTeam(index: number, projectId: number, clientId: number, clientTeam: number, projectTeam: number): void {
    if (clientTeam !== projectTeam) this.problems.addRelation(say.clientOfOtherTeam(locate('projects', index, projectId), clientId, clientTeam, projectTeam));
  }

  private unresolved(collection: Collection, index: number, id: number, field: string, value: number): void {
    const what = { teams: 'a team', users: 'a user', environment_id: 'an environment', server_id: 'a server', client_id: 'a client' };
    const kind = field === 'environment_id' || field === 'server_id' || field === 'client_id' ? what[field] : field === 'user_id' ? what.users : what.teams;
    this.problems.addRelation(say.notInSnapshot(locate(collection, index, id), field, value, kind));
  }

  // ---- the end of the file ------------------------------------------------------------

  finish() {
    this.resolvePending();
    const teams = [...this.teams.values()].map((team) => this.finishTeam(team));
    const byId = new Map(teams.map((team) => [team.id, team]));
    for (const user of this.users.values()) {
      for (const teamId of user.teams) byId.get(teamId)?.memberIds.push(user.id);
    }
    const all = { projects: concatSorted(teams.map((t) => t.projectIds)), daemons: concatSorted(teams.map((t) => t.daemonIds)) };
    const repeated = { projects: repeatedValues(all.projects), daemons: repeatedValues(all.daemons) };
    const environmentTeams = new Map([...this.environments].map(([id, e]) => [id, e.teamId]));
    return { teams, users: [...this.users.values()], tokens: this.tokens, environmentTeams, repeated };
  }

  private resolvePending(): void {
    for (const [collection, refs] of this.pending.team) {
      for (const { index, id, value, extra } of refs.entries()) {
        if (!this.has('team', value)) this.unresolved(collection, index, id, extra >= 0 ? `teams[${extra}]` : 'team_id', value);
      }
    }
    for (const { index, value } of this.pending.user.entries()) {
      if (!this.has('user', value)) this.unresolved('tokens', index, NaN, 'user_id', value);
    }
    for (const [environmentId, awaiting] of this.daemonsAwaitingEnvironment) {
      const ids = awaiting.ids.toArray();
      let i = 0;
      for (const index of awaiting.indexes) this.unresolved('daemons', index, ids[i++]!, 'environment_id', environmentId);
    }
    for (const { index, id, value } of this.pending.server.entries()) {
      if (!this.has('server', value)) this.unresolved('daemons', index, id, 'server_id', value);
    }
    for (const { index, id, value, extra } of this.pending.client.entries()) {
      const client = this.clients.get(value);
      if (client) this.checkClientTeam(index, id, value, client.teamId, extra);
      else if (!this.malformed.clients.has(value)) this.unresolved('projects', index, id, 'client_id', value);
    }
  }

  private finishTeam(team: { index: number; id: number; slug: string; name: string }): SnapshotTeam {
    const bucket = this.buckets.get(team.id) ?? new TeamBucket();
    const finance = summarizeCosts(bucket.costs.values());
    const where = locate('teams', team.index, team.id);
    for (const total of finance.totals) {
      if (total.units >= AMOUNT_LIMIT_UNITS) this.problems.addRelation(say.teamTotalTooLarge(where, total.currency, formatAmount(total.units), LIMITS.amountBelow.toLocaleString('en')));
    }
    if (finance.grandTotal >= AMOUNT_LIMIT_UNITS) this.problems.addRelation(say.teamGrandTotalTooLarge(where, formatAmount(finance.grandTotal), LIMITS.amountBelow.toLocaleString('en')));
    // DynamoDB's limits, in bytes as DynamoDB counts them: the finance item is the one that grows.
    const fieldsJson = financeFieldsJson(finance);
    const financeBytes = itemSize(financeItem(team, fieldsJson));
    if (financeBytes > DYNAMODB_LIMITS.itemBytes) this.problems.addRelation(say.itemTooLarge(where, 'finance summary', financeBytes, DYNAMODB_LIMITS.itemBytes));
    const transactionBytes = switchTransactionBytes(team, fieldsJson);
    if (transactionBytes > DYNAMODB_LIMITS.transactionBytes) this.problems.addRelation(say.transactionTooLarge(where, transactionBytes, DYNAMODB_LIMITS.transactionBytes));
    if (SWITCH_ACTIONS_MAX > DYNAMODB_LIMITS.transactionActions) throw new Error('a team switch has more actions than a transaction may hold');
    const projectIds = bucket.projectIds.toArray().sort();
    const daemonIds = bucket.daemonIds.toArray().sort();
    this.buckets.delete(team.id);
    return { index: team.index, id: team.id, slug: team.slug, name: team.name, projectIds, daemonIds, finance, memberIds: [] };
  }
}

/** All teams' sorted ids in one sorted array, to find an id used twice anywhere in a collection. */
function concatSorted(lists: Float64Array[]): Float64Array {
  const all = new Float64Array(lists.reduce((n, l) => n + l.length, 0));
  let at = 0;
  for (const list of lists) {
    all.set(list, at);
    at += list.length;
  }
  return all.sort();
}

/**
 * Ids repeated within projects or daemons are found by sorting; which records hold them is found
 * by reading the file once more (only when there are any), so each later record is named.
 */
async function locateRepeats(path: string, repeated: { projects: number[]; daemons: number[] }, problems: Problems): Promise<void> {
  const wanted = { projects: new Set(repeated.projects), daemons: new Set(repeated.daemons) };
  const seen = { projects: new Set<number>(), daemons: new Set<number>() };
  await readSnapshotRecords(path, {
    record(collection, index, fields) {
      if (collection !== 'projects' && collection !== 'daemons') return;
      const id = fields.id as number;
      if (!wanted[collection].has(id)) return;
      if (seen[collection].has(id)) problems.addRelation(say.duplicateId(locate(collection, index, id)));
      seen[collection].add(id);
    },
  }, new Problems());
}
