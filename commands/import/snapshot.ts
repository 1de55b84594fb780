import * as v from 'valibot';
import { isTokenAbility, TOKEN_ABILITIES } from '../../shared/domain/abilities.ts';
import { parseAmount } from './decimal.ts';
import { summarizeCosts, SERVERS_LABEL, type Cost, type FinanceSummary } from './finance.ts';
import type { Daemon, Project } from '../../shared/domain/resources.ts';
import { toUtcTimestamp } from './timestamp.ts';

/**
 * The snapshot format (contract section 7): validated whole, before anything is written, into
 * one image per team. Every problem is reported as `collection[index] (id N): field problem`.
 */

// Limits that keep every stored item far below DynamoDB's 400 KB and keys below 1 KB.
export const LIMITS = { slug: 255, label: 255, text: 4096, secret: 512, membersPerTeam: 10_000, linesPerTeam: 1_000 };

const id = v.pipe(
  v.number('must be a positive integer'),
  v.safeInteger('must be a positive integer'),
  v.minValue(1, 'must be a positive integer'),
);
const count = v.pipe(
  v.number('must be a whole number'),
  v.safeInteger('must be a whole number'),
  v.minValue(0, 'must not be negative'),
);
const text = (max = LIMITS.text) =>
  v.pipe(v.string('must be a string'), v.maxLength(max, `must be at most ${max} characters`));
const name = v.pipe(text(), v.minLength(1, 'must not be empty'));
const currency = v.pipe(v.string('must be a string'), v.regex(/^[A-Z]{3}$/, 'is not a currency code of 3 capital letters'));
const amount = v.custom<string | number>((input) => parseAmount(input).ok, (issue) => {
  const parsed = parseAmount(issue.input);
  return parsed.ok ? 'is not a valid amount' : parsed.problem;
});
const isoTime = v.pipe(
  v.string('must be a string'),
  v.check((input) => toUtcTimestamp(input) !== undefined, 'is not an ISO 8601 time'),
);

const TeamRecord = v.object({
  id,
  slug: v.pipe(
    text(LIMITS.slug),
    v.minLength(1, 'must not be empty'),
    v.check((s) => !/^[0-9]+$/.test(s), 'must not be all digits (an all-digit segment is a team id)'),
    v.check((s) => !/[/\s]/.test(s), 'must not contain a slash or white space'),
  ),
  name,
});
const UserRecord = v.object({
  id,
  name: v.optional(text(), ''),
  teams: v.optional(v.array(id, 'must be an array of team ids'), []),
});
const TokenRecord = v.object({
  user_id: id,
  token: v.pipe(
    v.string('must be a string'),
    v.minLength(1, 'must not be empty'),
    v.maxLength(LIMITS.secret, `must be at most ${LIMITS.secret} characters`),
    v.regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces (it travels in a header)'),
  ),
  name: v.optional(text(), ''),
  abilities: v.array(
    v.pipe(v.string('must be a string'), v.check(isTokenAbility, `must each be one of ${TOKEN_ABILITIES.join(', ')}`)),
    'must be an array of abilities',
  ),
  expires_at: v.optional(v.nullable(isoTime), null),
});
const EnvironmentRecord = v.object({ id, team_id: id, name });
const ServerRecord = v.object({ id, team_id: id, name, monthly_cost: amount, currency });
const ClientRecord = v.object({ id, team_id: id, name });
const ProjectRecord = v.object({
  id,
  team_id: id,
  client_id: v.optional(v.nullable(id), null),
  name,
  slug: text(),
  created_at: isoTime,
});
const DaemonRecord = v.object({
  id,
  environment_id: id,
  server_id: id,
  name,
  command: text(),
  username: text(),
  directory: text(),
  processes: count,
});
const CostRecord = v.object({ team_id: id, label: v.pipe(text(LIMITS.label), v.minLength(1, 'must not be empty')), amount, currency });

const COLLECTIONS = {
  teams: TeamRecord,
  users: UserRecord,
  tokens: TokenRecord,
  environments: EnvironmentRecord,
  servers: ServerRecord,
  clients: ClientRecord,
  projects: ProjectRecord,
  daemons: DaemonRecord,
  costs: CostRecord,
} as const;
type Collections = typeof COLLECTIONS;
type Records = { [K in keyof Collections]: v.InferOutput<Collections[K]>[] };

export interface TeamImage {
  id: number;
  slug: string;
  name: string;
  /** In id order; ordinal n is projects[n - 1]. */
  projects: Project[];
  daemons: Daemon[];
  finance: FinanceSummary;
  /** Users of this snapshot who list the team. */
  memberIds: number[];
}

export interface SnapshotPlan {
  teams: TeamImage[];
  users: { id: number; name: string; teams: number[] }[];
  tokens: { userId: number; secret: string; name: string; abilities: string[]; expiresAt: string | null }[];
}

export type SnapshotResult = { ok: true; plan: SnapshotPlan } | { ok: false; problems: string[] };

/** Validates a parsed snapshot document whole and, when it is valid, plans every team's image. */
export function validateSnapshot(document: unknown): SnapshotResult {
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    return { ok: false, problems: ['the snapshot must be a JSON object'] };
  }
  const problems: string[] = [];
  const records = {} as Records;
  // Ids of malformed records still count as present, so a reference to one is not reported twice.
  const malformedIds: Partial<Record<keyof Collections, Set<unknown>>> = {};
  for (const [collection, schema] of Object.entries(COLLECTIONS) as [keyof Collections, v.GenericSchema][]) {
    const raw = (document as Record<string, unknown>)[collection];
    (records as Record<string, unknown[]>)[collection] = [];
    if (raw === undefined) continue;
    if (!Array.isArray(raw)) {
      problems.push(`${collection}: must be an array`);
      continue;
    }
    raw.forEach((record, index) => {
      const where = locate(collection, index, record);
      if (typeof record !== 'object' || record === null || Array.isArray(record)) {
        problems.push(`${where}: must be an object`);
        return;
      }
      const result = v.safeParse(schema, record, { abortPipeEarly: true });
      if (result.success) (records[collection] as unknown[]).push(result.output);
      else {
        for (const issue of result.issues) problems.push(`${where}: ${describe(issue)}`);
        (malformedIds[collection] ??= new Set()).add((record as { id?: unknown }).id);
      }
    });
  }
  // Cross-record rules run on the well-formed records, so one pass reports every problem.
  checkReferences(records, malformedIds, problems);
  if (problems.length > 0) return { ok: false, problems };
  const plan = planImages(records);
  checkTeamSizes(plan, problems);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, plan };
}

function locate(collection: string, index: number, record: unknown): string {
  const recordId = (record as { id?: unknown } | null)?.id;
  return typeof recordId === 'number' || typeof recordId === 'string'
    ? `${collection}[${index}] (id ${recordId})`
    : `${collection}[${index}]`;
}

function describe(issue: v.BaseIssue<unknown>): string {
  const path = (issue.path ?? []).map((item) => item.key).filter((key) => key !== undefined);
  const field = path.map((key, i) => (typeof key === 'number' ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`)).join('');
  if (issue.kind === 'schema' && issue.type === 'object' && issue.input === undefined && path.length > 0) {
    return `${field} is missing`;
  }
  return field ? `${field} ${issue.message}` : issue.message;
}

function checkReferences(r: Records, malformedIds: Partial<Record<keyof Collections, Set<unknown>>>, problems: string[]): void {
  const where = (collection: string, index: number, record: { id?: number }) =>
    record.id === undefined ? `${collection}[${index}]` : `${collection}[${index}] (id ${record.id})`;

  const indexById = <T extends { id: number }>(collection: string, list: T[]) => {
    const byId = new Map<number, T>();
    list.forEach((record, i) => {
      if (byId.has(record.id)) problems.push(`${where(collection, i, record)}: id is a duplicate`);
      else byId.set(record.id, record);
    });
    return byId;
  };
  /** A reference resolves to a well-formed record, or to a malformed one already reported. */
  const resolvable = <T>(collection: keyof Collections, byId: Map<number, T>) => ({
    has: (id: number) => byId.has(id) || (malformedIds[collection]?.has(id) ?? false),
    get: (id: number) => byId.get(id),
  });
  const teams = resolvable('teams', indexById('teams', r.teams));
  const users = resolvable('users', indexById('users', r.users));
  const environments = resolvable('environments', indexById('environments', r.environments));
  const servers = resolvable('servers', indexById('servers', r.servers));
  const clients = resolvable('clients', indexById('clients', r.clients));
  indexById('projects', r.projects);
  indexById('daemons', r.daemons);

  const slugs = new Set<string>();
  r.teams.forEach((team, i) => {
    if (slugs.has(team.slug)) problems.push(`${where('teams', i, team)}: slug "${team.slug}" is a duplicate`);
    slugs.add(team.slug);
  });
  const secrets = new Set<string>();
  r.tokens.forEach((token, i) => {
    if (secrets.has(token.token)) problems.push(`tokens[${i}]: token is a duplicate of an earlier token`);
    secrets.add(token.token);
    if (!users.has(token.user_id)) problems.push(`tokens[${i}]: user_id ${token.user_id} is not a user of the snapshot`);
  });
  r.users.forEach((user, i) =>
    user.teams.forEach((teamId, j) => {
      if (!teams.has(teamId)) problems.push(`${where('users', i, user)}: teams[${j}] ${teamId} is not a team of the snapshot`);
    }),
  );
  const needTeam = (collection: string, list: { id?: number; team_id: number }[]) =>
    list.forEach((record, i) => {
      if (!teams.has(record.team_id))
        problems.push(`${where(collection, i, record)}: team_id ${record.team_id} is not a team of the snapshot`);
    });
  needTeam('environments', r.environments);
  needTeam('servers', r.servers);
  needTeam('clients', r.clients);
  needTeam('projects', r.projects);
  needTeam('costs', r.costs);
  r.projects.forEach((project, i) => {
    if (project.client_id === null) return;
    const client = clients.get(project.client_id);
    if (!client && clients.has(project.client_id)) return; // malformed client, reported already
    if (!client) problems.push(`${where('projects', i, project)}: client_id ${project.client_id} is not a client of the snapshot`);
    else if (client.team_id !== project.team_id)
      problems.push(`${where('projects', i, project)}: client_id ${project.client_id} belongs to team ${client.team_id}, not to the project's team ${project.team_id}`);
  });
  r.daemons.forEach((daemon, i) => {
    if (!environments.has(daemon.environment_id))
      problems.push(`${where('daemons', i, daemon)}: environment_id ${daemon.environment_id} is not an environment of the snapshot`);
    if (!servers.has(daemon.server_id))
      problems.push(`${where('daemons', i, daemon)}: server_id ${daemon.server_id} is not a server of the snapshot`);
  });
}

function planImages(r: Records): SnapshotPlan {
  const images = new Map<number, TeamImage & { costs: Cost[] }>();
  for (const team of r.teams) {
    images.set(team.id, {
      id: team.id, slug: team.slug, name: team.name, projects: [], daemons: [], memberIds: [], costs: [],
      finance: summarizeCosts([]),
    });
  }
  const image = (teamId: number) => images.get(teamId)!;
  const units = (value: string | number) => {
    const parsed = parseAmount(value);
    return parsed.ok ? parsed.units : 0n; // already validated
  };
  for (const p of r.projects) {
    image(p.team_id).projects.push({
      id: p.id, name: p.name, slug: p.slug, client_id: p.client_id, created_at: toUtcTimestamp(p.created_at)!,
    });
  }
  const environmentTeam = new Map(r.environments.map((e) => [e.id, e.team_id]));
  for (const d of r.daemons) {
    image(environmentTeam.get(d.environment_id)!).daemons.push({
      id: d.id, name: d.name, command: d.command, username: d.username, directory: d.directory,
      processes: d.processes, environment_id: d.environment_id, server_id: d.server_id,
    });
  }
  for (const s of r.servers) image(s.team_id).costs.push({ label: SERVERS_LABEL, currency: s.currency, units: units(s.monthly_cost) });
  for (const c of r.costs) image(c.team_id).costs.push({ label: c.label, currency: c.currency, units: units(c.amount) });
  for (const u of r.users) for (const teamId of new Set(u.teams)) image(teamId).memberIds.push(u.id);

  const teams = [...images.values()].map(({ costs, ...team }) => {
    team.projects.sort((a, b) => a.id - b.id);
    team.daemons.sort((a, b) => a.id - b.id);
    return { ...team, finance: summarizeCosts(costs) };
  });
  return {
    teams,
    users: r.users.map((u) => ({ id: u.id, name: u.name, teams: [...new Set(u.teams)] })),
    tokens: r.tokens.map((t) => ({
      userId: t.user_id, secret: t.token, name: t.name, abilities: [...new Set(t.abilities)],
      expiresAt: t.expires_at === null ? null : toUtcTimestamp(t.expires_at)!,
    })),
  };
}

function checkTeamSizes(plan: SnapshotPlan, problems: string[]): void {
  plan.teams.forEach((team, i) => {
    if (team.memberIds.length > LIMITS.membersPerTeam)
      problems.push(`teams[${i}] (id ${team.id}): has ${team.memberIds.length} members, more than the ${LIMITS.membersPerTeam} one team can hold`);
    if (team.finance.lineItems.length > LIMITS.linesPerTeam)
      problems.push(`teams[${i}] (id ${team.id}): has ${team.finance.lineItems.length} finance line items, more than the ${LIMITS.linesPerTeam} one team can hold`);
  });
}
