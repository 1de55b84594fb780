/**
 * Small snapshot factories. `team(n)` etc. build records with predictable ids, so a test reads
 * as the data it needs: snapshot({ teams: [team(1)], projects: projects(1, 30) }).
 */
export const team = (id: number, slug = `team-${id}`, name = `Team ${id}`) => ({ id, slug, name });
export const user = (id: number, teams: number[], name = `User ${id}`) => ({ id, name, teams });
export const token = (
  userId: number,
  secret: string,
  abilities: string[] = ['*'],
  extra: Record<string, unknown> = {},
) => ({
  user_id: userId,
  token: secret,
  name: `token of ${userId}`,
  abilities,
  ...extra,
});

/** `count` projects of a team with ids firstId, firstId + 1, ... */
export function projects(teamId: number, count: number, firstId = teamId * 100_000 + 1) {
  return Array.from({ length: count }, (_, i) => ({
    id: firstId + i,
    team_id: teamId,
    client_id: null,
    name: `Project ${firstId + i}`,
    slug: `project-${firstId + i}`,
    created_at: '2026-01-02T05:04:05+02:00',
  }));
}

export const environment = (id: number, teamId: number, name = 'production') => ({ id, team_id: teamId, name });
export const server = (id: number, teamId: number, monthlyCost: string | number = '10.00', currency = 'EUR') => ({
  id,
  team_id: teamId,
  name: `server-${id}`,
  monthly_cost: monthlyCost,
  currency,
});

/** `count` daemons in one environment, all on one server. */
export function daemons(environmentId: number, serverId: number, count: number, firstId = environmentId * 100_000 + 1) {
  return Array.from({ length: count }, (_, i) => ({
    id: firstId + i,
    environment_id: environmentId,
    server_id: serverId,
    name: `daemon-${firstId + i}`,
    command: 'php artisan queue:work',
    username: 'forge',
    directory: '/home/forge/app',
    processes: 1 + (i % 3),
  }));
}

export function snapshot(parts: Record<string, unknown[]>) {
  return { ...parts };
}
