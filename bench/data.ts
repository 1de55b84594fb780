/**
 * The benchmark's snapshots: teams of a given size (as many daemons as projects), each with one
 * member and one token, realistic record sizes (names, slugs, ISO times, commands), deterministic.
 * Each team is its own snapshot document, so teams can be imported one at a time: each has its
 * own user, so importing one team never touches another team's members.
 */

export interface BenchTeam {
  id: number;
  slug: string;
  size: number;
  userId: number;
  secret: string;
  /** Members besides the token's user (users of this team alone, with no token). */
  otherMembers: number;
  /** Cost records, each its own finance line. */
  costLines: number;
}

export function benchTeam(id: number, size: number, crowd: { slug: string; otherMembers: number; costLines: number } | undefined = undefined): BenchTeam {
  return {
    id, slug: crowd?.slug ?? `bench-${size}`, size, userId: 1_000 + id, secret: `bench-secret-${id}-${size}`,
    otherMembers: crowd?.otherMembers ?? 0, costLines: crowd?.costLines ?? 1,
  };
}

const WORDS = ['atlas', 'beacon', 'cobalt', 'delta', 'ember', 'falcon', 'garnet', 'harbor', 'indigo', 'juniper', 'krypton', 'lumen', 'meridian', 'nimbus', 'orbit', 'pioneer'];
const KINDS = ['queue', 'scheduler', 'horizon', 'websockets'];

/** A snapshot document (the import file's format) holding one team of `team.size` projects and daemons. */
export function teamSnapshot(team: BenchTeam): Record<string, unknown[]> {
  const environmentIds = [team.id * 10 + 1, team.id * 10 + 2];
  const serverIds = [team.id * 10 + 1, team.id * 10 + 2, team.id * 10 + 3];
  const projects = new Array(team.size);
  const daemons = new Array(team.size);
  for (let i = 0; i < team.size; i++) {
    const name = `${WORDS[i % 16]} ${WORDS[(i >> 4) % 16]} ${i + 1}`;
    projects[i] = {
      id: team.id * 10_000_000 + 2 * i + 1, // ids with gaps, as real ids have
      team_id: team.id,
      client_id: null,
      name,
      slug: name.replace(/ /g, '-'),
      created_at: `2026-${String(1 + (i % 12)).padStart(2, '0')}-${String(1 + (i % 28)).padStart(2, '0')}T0${i % 10}:04:05.${String(i % 1000).padStart(3, '0')}+02:00`,
    };
    const kind = KINDS[i % 4]!;
    daemons[i] = {
      id: team.id * 10_000_000 + i + 1,
      environment_id: environmentIds[i % 2],
      server_id: serverIds[i % 3],
      name: `${kind}-${i + 1}`,
      command: kind === 'queue' ? 'php artisan queue:work --tries=3' : `php artisan ${kind}`,
      username: 'forge',
      directory: `/home/forge/app-${i % 50}`,
      processes: 1 + (i % 4),
    };
  }
  return {
    teams: [{ id: team.id, slug: team.slug, name: `Bench team of ${team.size.toLocaleString('en')}` }],
    users: [
      { id: team.userId, name: `Bench user ${team.id}`, teams: [team.id] },
      ...Array.from({ length: team.otherMembers }, (_, i) => ({ id: team.id * 1_000_000 + i + 1, name: `Member ${i + 1} of team ${team.id}`, teams: [team.id] })),
    ],
    tokens: [{ user_id: team.userId, token: team.secret, name: 'bench', abilities: ['*'] }],
    environments: environmentIds.map((id, i) => ({ id, team_id: team.id, name: i === 0 ? 'production' : 'staging' })),
    servers: serverIds.map((id, i) => ({ id, team_id: team.id, name: `web-${i + 1}`, monthly_cost: '24.15', currency: i === 2 ? 'USD' : 'EUR' })),
    projects,
    daemons,
    costs: Array.from({ length: team.costLines }, (_, i) => (i === 0
      ? { team_id: team.id, label: 'Backups', amount: '5.00', currency: 'EUR' }
      : { team_id: team.id, label: `Cost line ${String(i).padStart(3, '0')}: ${WORDS[i % 16]} ${KINDS[i % 4]}`, amount: `${i}.25`, currency: i % 3 === 0 ? 'USD' : 'EUR' })),
  };
}
