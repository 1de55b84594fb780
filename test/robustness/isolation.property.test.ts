import fc from 'fast-check';
import pMap from 'p-map';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revoke } from '../../commands/tokens/tokens.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { contractProblems } from '../support/contract-bodies.ts';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { contractName } from '../support/contract-arbitraries.ts';
import { expectedFinance, financeDifferences, unitsToText, type CostEntry } from '../support/finance-model.ts';
import { propertyParameters, replayHint, runs, timeLimit } from '../support/fuzz.ts';

/**
 * Isolation, property-based: random worlds of teams, users, tokens with random abilities, and
 * daemons whose environment and server belong to different teams, all imported into ONE table
 * (each run with ids of its own). Every token, asked about every team in every way, gets exactly
 * what the contract's order of checks gives: 401, 403, 404, or 200 with only that team's data.
 */
const FILE = 'test/robustness/isolation.property.test.ts';
const RUNS = 15;
/** A run imports a world and sends ~300 requests: shrinking a failure tries at most this many smaller worlds. */
const MAX_SHRINKS = 60;
const ABILITIES = ['finances:read', 'daemons:read', 'projects:read', '*'] as const;
const ROUTES = [
  { resource: 'finances', ability: 'finances:read' },
  { resource: 'daemons', ability: 'daemons:read' },
  { resource: 'projects', ability: 'projects:read' },
] as const;
const CURRENCIES = ['EUR', 'USD', 'GBP'] as const;

interface Team {
  id: number;
  slug: string;
  name: string;
}
interface Token {
  secret: string;
  userId: number;
  abilities: string[];
  valid: boolean;
}
interface Project {
  id: number;
  name: string;
  slug: string;
  client_id: number | null;
  created_at: string;
}
interface Daemon {
  id: number;
  name: string;
  command: string;
  username: string;
  directory: string;
  processes: number;
  environment_id: number;
  server_id: number;
}

/** Everything imported so far, across runs: the model the answers are checked against. */
const model = {
  teams: new Map<string, Team>(), // by segment: id as written, and slug
  members: new Map<number, Set<number>>(), // team id -> user ids
  projects: new Map<number, Project[]>(),
  daemons: new Map<number, Daemon[]>(),
  costs: new Map<number, CostEntry[]>(),
  tokens: [] as Token[],
  teamList: [] as Team[],
};

const amount = fc.bigInt({ min: 0n, max: 10n ** 9n }).map((units) => ({ units, text: unitsToText(units) }));
const name = contractName;
const teamSpec = fc.record({
  environments: fc.integer({ min: 0, max: 2 }),
  servers: fc.array(fc.record({ cost: amount, currency: fc.constantFrom(...CURRENCIES) }), { maxLength: 2 }),
  clients: fc.integer({ min: 0, max: 2 }),
  projects: fc.array(
    fc.record({
      gap: fc.integer({ min: 1, max: 4 }),
      client: fc.option(fc.nat(), { nil: null }),
      name,
      slug: contractName, // project slugs follow the name rules (1 to 255 characters), unlike team slugs
      at: fc.integer({ min: 0, max: 4_102_444_799_999 }), // 1970 .. 2099
      offsetMinutes: fc.constantFrom(0, 60, 120, -300, 330, 345, -720, 840),
      zulu: fc.boolean(),
    }),
    { maxLength: 8 },
  ),
  costs: fc.array(
    fc.record({
      label: fc.constantFrom('Backups', 'Servers', 'DNS', 'backups', 'Élan'),
      cost: amount,
      currency: fc.constantFrom(...CURRENCIES),
    }),
    { maxLength: 3 },
  ),
  reversed: fc.boolean(),
});
const worldSpec = fc.record({
  teams: fc.array(teamSpec, { minLength: 2, maxLength: 4 }),
  users: fc.array(fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }), { minLength: 1, maxLength: 4 }),
  tokens: fc.array(
    fc.record({
      user: fc.nat(),
      abilities: fc.subarray([...ABILITIES]),
      expiry: fc.constantFrom('none', 'none', 'future', 'past'),
      revoked: fc.oneof({ weight: 7, arbitrary: fc.constant(false) }, { weight: 3, arbitrary: fc.constant(true) }),
    }),
    { minLength: 1, maxLength: 6 },
  ),
  daemons: fc.array(fc.record({ environment: fc.nat(), server: fc.nat(), processes: fc.nat(64), name }), {
    maxLength: 10,
  }),
});
type WorldSpec = typeof worldSpec extends fc.Arbitrary<infer T> ? T : never;

const pad = (n: number, width = 2) => String(n).padStart(width, '0');
/** `at` written in local time at the given offset, with milliseconds; and what the API must show. */
function timestamps(at: number, offsetMinutes: number, zulu: boolean): { written: string; shown: string } {
  const shown = `${new Date(Math.floor(at / 1000) * 1000).toISOString().slice(0, 19)}+00:00`;
  const offset = zulu ? 0 : offsetMinutes;
  const local = new Date(at + offset * 60_000);
  const wall = `${pad(local.getUTCFullYear(), 4)}-${pad(local.getUTCMonth() + 1)}-${pad(local.getUTCDate())}T${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}:${pad(local.getUTCSeconds())}.${pad(local.getUTCMilliseconds(), 3)}`;
  const sign = offset < 0 ? '-' : '+';
  const zone = zulu ? 'Z' : `${sign}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
  return { written: wall + zone, shown };
}

let run = 0;
/** Builds the snapshot of one run (ids unique to the run) and records it in the model. */
function buildWorld(spec: WorldSpec) {
  run++;
  const base = run * 1_000;
  const teams: Team[] = spec.teams.map((_, i) => ({
    id: base + i + 1,
    slug: `iso-${run}-${i}-team`,
    name: `Team ${run}/${i}`,
  }));
  const environments: { id: number; team_id: number; name: string }[] = [];
  const servers: { id: number; team_id: number; name: string; monthly_cost: string; currency: string }[] = [];
  const clients: { id: number; team_id: number; name: string }[] = [];
  const projects: (Project & { team_id: number })[] = [];
  const costs: { team_id: number; label: string; amount: string; currency: string }[] = [];
  let projectId = base * 100;
  spec.teams.forEach((t, i) => {
    const team = teams[i]!;
    for (let e = 0; e < t.environments; e++)
      environments.push({ id: base + 10 * i + e + 1, team_id: team.id, name: `env-${e}` });
    for (const [k, s] of t.servers.entries())
      servers.push({
        id: base + 10 * i + k + 1,
        team_id: team.id,
        name: `srv-${k}`,
        monthly_cost: s.cost.text,
        currency: s.currency,
      });
    const teamClients = Array.from({ length: t.clients }, (_, c) => base + 10 * i + c + 1);
    for (const id of teamClients) clients.push({ id, team_id: team.id, name: `client-${id}` });
    const own = t.projects.map((p) => {
      projectId += p.gap;
      const { written, shown } = timestamps(p.at, p.offsetMinutes, p.zulu);
      const client = p.client === null || teamClients.length === 0 ? null : teamClients[p.client % teamClients.length]!;
      return {
        record: { id: projectId, team_id: team.id, client_id: client, name: p.name, slug: p.slug, created_at: written },
        shown,
      };
    });
    model.projects.set(
      team.id,
      own.map(({ record, shown }) => ({
        id: record.id,
        name: record.name,
        slug: record.slug,
        client_id: record.client_id,
        created_at: shown,
      })),
    );
    projects.push(...(t.reversed ? [...own].reverse() : own).map((p) => p.record));
    for (const c of t.costs)
      costs.push({ team_id: team.id, label: c.label, amount: c.cost.text, currency: c.currency });
    model.costs.set(team.id, [
      ...t.servers.map((s) => ({ label: 'Servers', currency: s.currency, units: s.cost.units })),
      ...t.costs.map((c) => ({ label: c.label, currency: c.currency, units: c.cost.units })),
    ]);
  });
  // Daemons pick any environment and any server, so a daemon's server is often another team's.
  const daemons: Daemon[] = [];
  if (environments.length > 0 && servers.length > 0) {
    spec.daemons.forEach((d, k) => {
      const environment = environments[d.environment % environments.length]!;
      const server = servers[d.server % servers.length]!;
      daemons.push({
        id: base * 100 + 50_000 - k,
        name: d.name,
        command: `run ${k}`,
        username: 'forge',
        directory: `/srv/${k}`,
        processes: d.processes,
        environment_id: environment.id,
        server_id: server.id,
      });
    });
  }
  for (const team of teams) {
    const envIds = new Set(environments.filter((e) => e.team_id === team.id).map((e) => e.id));
    model.daemons.set(
      team.id,
      daemons.filter((d) => envIds.has(d.environment_id)).sort((a, b) => a.id - b.id),
    );
  }
  const users = spec.users.map((mask, u) => ({
    id: base + u + 1,
    name: `user ${u}`,
    teams: teams.filter((_, i) => mask[i]).map((t) => t.id),
  }));
  for (const team of teams)
    model.members.set(team.id, new Set(users.filter((u) => u.teams.includes(team.id)).map((u) => u.id)));
  const tokens = spec.tokens.map((t, k) => ({
    user_id: users[t.user % users.length]!.id,
    token: `iso-${run}-${k}-secret`, // unique: `run` counts every world, shrinking's included
    abilities: t.abilities,
    expires_at: t.expiry === 'none' ? null : t.expiry === 'past' ? '2001-02-03T04:05:06Z' : '2999-01-01T00:00:00+01:00',
  }));
  const runTokens: Token[] = tokens.map((t, k) => ({
    secret: t.token,
    userId: t.user_id,
    abilities: t.abilities,
    valid: spec.tokens[k]!.expiry !== 'past' && !spec.tokens[k]!.revoked,
  }));
  for (const team of teams) {
    model.teams.set(String(team.id), team);
    model.teams.set(team.slug, team);
  }
  const document = { teams, users, tokens, environments, servers, clients, projects, daemons, costs };
  const revoked = tokens.filter((_, k) => spec.tokens[k]!.revoked).map((t) => t.token);
  return { teams, runTokens, document, revoked };
}

interface Expected {
  status: number;
  body?: unknown;
  finance?: CostEntry[];
}

function expectedAnswer(
  token: Token | undefined,
  segment: string,
  route: (typeof ROUTES)[number],
  url: string,
): Expected {
  if (!token?.valid) return { status: 401, body: { message: 'Unauthenticated.' } };
  if (!token.abilities.includes(route.ability) && !token.abilities.includes('*')) {
    return {
      status: 403,
      body: {
        message: `This token does not have the ${route.ability} ability.`,
        code: 'insufficient_permission',
        missing_permissions: [route.ability],
      },
    };
  }
  const team = model.teams.get(segment);
  if (!team || !model.members.get(team.id)?.has(token.userId)) return { status: 404, body: { message: 'Not Found' } };
  if (route.resource === 'finances') return { status: 200, finance: model.costs.get(team.id)! };
  const items = route.resource === 'projects' ? model.projects.get(team.id)! : model.daemons.get(team.id)!;
  const sorted = [...items].sort((a, b) => a.id - b.id);
  const path = `${url}/api/${encodeURIComponent(segment)}/${route.resource}`;
  return {
    status: 200,
    body: {
      data: sorted,
      links: { first: `${path}?page=1`, last: `${path}?page=1`, prev: null, next: null },
      meta: {
        current_page: 1,
        from: sorted.length > 0 ? 1 : null,
        last_page: 1,
        per_page: 20,
        to: sorted.length > 0 ? sorted.length : null,
        total: sorted.length,
        path,
      },
      results: sorted.length,
    },
  };
}

let api: TestApi;
let table: TestTable;
beforeAll(async () => {
  table = await freshTable();
  api = await startApi(table);
});
afterAll(() => api?.close());

describe('isolation between teams, users and tokens (property-based, through HTTP)', () => {
  it(
    "gives every token exactly what its user's teams own, through the abilities it has, and 401/403/404 in the contract's order otherwise",
    async () => {
      let requests = 0;
      await fc.assert(
        fc.asyncProperty(fc.limitShrink(worldSpec, MAX_SHRINKS), async (spec) => {
          const earlierTeams = model.teamList.slice(-1);
          const earlierTokens = model.tokens.slice(-1);
          const { teams, runTokens, document, revoked } = buildWorld(spec);
          await importDocument(table, document);
          for (const secret of revoked) expect(await revoke(table.doc, table.tableName, { secret })).toBeDefined();

          const segments = [
            ...teams.flatMap((t) => [String(t.id), t.slug]),
            ...earlierTeams.map((t) => t.slug),
            `0${teams[0]!.id}`, // digits compared as written: 01 is not team 1
            `iso-${run}-nope`,
            teams[0]!.slug.toUpperCase(),
          ];
          const callers: (Token | { unknown: string } | undefined)[] = [
            ...runTokens,
            ...earlierTokens,
            undefined,
            { unknown: `iso-${run}-unknown` },
          ];
          const cases = callers.flatMap((caller) =>
            segments.flatMap((segment) => ROUTES.map((route) => ({ caller, segment, route }))),
          );
          const failures: string[] = [];
          await pMap(
            cases,
            async ({ caller, segment, route }) => {
              const token = caller && 'secret' in caller ? caller : undefined;
              const secret = caller === undefined ? undefined : 'secret' in caller ? caller.secret : caller.unknown;
              const res = await api.get(`/api/${encodeURIComponent(segment)}/${route.resource}`, { token: secret });
              requests++;
              const expected = expectedAnswer(token, segment, route, api.server.url);
              const label = `${secret ?? '(no token)'} [${token?.abilities.join(',') ?? ''}${token && !token.valid ? ' invalid' : ''}] GET /api/${segment}/${route.resource}`;
              const problems = contractProblems({
                status: res.status,
                headers: Object.fromEntries(res.headers),
                body: res.text,
              });
              if (res.status !== expected.status)
                problems.push(`status ${res.status}, expected ${expected.status}: ${res.text.slice(0, 200)}`);
              else if (expected.finance)
                problems.push(...financeDifferences(res.text, expectedFinance(expected.finance)));
              else if (expected.body) {
                const { served_in: _servedIn, ...body } = res.body;
                if (JSON.stringify(body) !== JSON.stringify(expected.body))
                  problems.push(
                    `body ${res.text.slice(0, 300)}\n  expected ${JSON.stringify(expected.body).slice(0, 300)}`,
                  );
              }
              if (problems.length > 0) failures.push(`${label}: ${problems.join('; ')}`);
            },
            { concurrency: 12 },
          );
          model.teamList.push(...teams);
          model.tokens.push(...runTokens);
          expect(failures, failures.slice(0, 5).join('\n')).toEqual([]);
        }),
        propertyParameters(RUNS),
      );
      console.info(
        `isolation: ${run} worlds imported into one table, ${requests} requests checked; ${replayHint(FILE)}`,
      );
      expect(requests).toBeGreaterThan(runs(RUNS) * 100);
    },
    timeLimit(180_000, RUNS, runs(RUNS)),
  );
});
