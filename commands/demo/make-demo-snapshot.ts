import { writeFile } from 'node:fs/promises';

/**
 * Writes data/demo-snapshot.json: three teams that show every feature. Deterministic, so the
 * committed file only changes when this script does. Run: node commands/demo/make-demo-snapshot.ts
 */
let seed = 42;
const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;

const words = ['atlas', 'beacon', 'cobalt', 'delta', 'ember', 'falcon', 'garnet', 'harbor', 'indigo', 'juniper', 'krypton', 'lumen', 'meridian', 'nimbus', 'orbit', 'pioneer', 'quartz', 'raven', 'summit', 'tundra'];
const teams = [
  { id: 1, slug: 'acme', name: 'Acme Corporation' },
  { id: 2, slug: 'globex', name: 'Globex' },
  { id: 3, slug: 'initech', name: 'Initech' },
];
const users = [
  { id: 10, name: 'Ada Lovelace', teams: [1, 2] },
  { id: 11, name: 'Bob Page', teams: [2] },
  { id: 12, name: 'Cy Young', teams: [3] },
  { id: 13, name: 'Dee Outsider', teams: [] },
];
const environments = [
  { id: 5, team_id: 1, name: 'production' }, { id: 6, team_id: 1, name: 'staging' },
  { id: 7, team_id: 2, name: 'production' }, { id: 8, team_id: 3, name: 'production' },
];
const servers = [
  { id: 70, team_id: 1, name: 'web-1', monthly_cost: '24.15', currency: 'EUR' },
  { id: 71, team_id: 1, name: 'web-2', monthly_cost: '24.15', currency: 'EUR' },
  { id: 72, team_id: 1, name: 'worker-us', monthly_cost: 19.9, currency: 'USD' },
  { id: 73, team_id: 2, name: 'shared-queue', monthly_cost: '40.00', currency: 'USD' },
  { id: 74, team_id: 3, name: 'legacy', monthly_cost: '0.1', currency: 'EUR' },
];
const clients = [
  { id: 3, team_id: 1, name: 'Client A' }, { id: 4, team_id: 1, name: 'Client B' },
  { id: 9, team_id: 2, name: 'Globex Internal' },
];
const costs = [
  { team_id: 1, label: 'Backups', amount: '5.00', currency: 'EUR' },
  { team_id: 1, label: 'Backups', amount: '2.5', currency: 'USD' },
  { team_id: 1, label: 'Servers', amount: '0.10', currency: 'EUR' },
  { team_id: 1, label: 'Load balancers', amount: '12.0001', currency: 'EUR' },
  { team_id: 2, label: 'Backups', amount: 0.2, currency: 'USD' },
  { team_id: 3, label: 'Backups', amount: '0.2', currency: 'EUR' },
];

const projectCounts: Record<number, number> = { 1: 243, 2: 57, 3: 0 };
const clientsOf: Record<number, (number | null)[]> = { 1: [3, 4, null], 2: [9, null], 3: [null] };
const projects = [];
let projectId = 1000;
for (const team of teams) {
  for (let i = 0; i < projectCounts[team.id]!; i++) {
    projectId += 1 + Math.floor(random() * 3); // ids with gaps, as real ids have
    const name = `${pick(words)} ${pick(words)} ${i + 1}`;
    const day = 1 + Math.floor(random() * 28);
    const offset = pick(['+00:00', '+02:00', '-05:00', 'Z', '+05:30']);
    projects.push({
      id: projectId, team_id: team.id, client_id: pick(clientsOf[team.id]!), name,
      slug: name.toLowerCase().replace(/[^a-z0-9]+/g, '-'),
      created_at: `2026-${String(1 + (i % 12)).padStart(2, '0')}-${String(day).padStart(2, '0')}T${String(Math.floor(random() * 24)).padStart(2, '0')}:04:05.${Math.floor(random() * 1000)}${offset}`,
    });
  }
}
// Daemons run in a team's environments; a daemon of Acme's production runs on Globex's server.
const daemons = [];
let daemonId = 1;
for (const env of environments) {
  const count = env.team_id === 1 ? (env.id === 5 ? 30 : 12) : env.team_id === 2 ? 8 : 0;
  const teamServers = servers.filter((s) => s.team_id === env.team_id).map((s) => s.id);
  for (let i = 0; i < count; i++) {
    const kind = pick(['queue', 'scheduler', 'horizon', 'websockets']);
    daemons.push({
      id: daemonId++, environment_id: env.id, server_id: env.id === 5 && i === 0 ? 73 : pick(teamServers),
      name: `${kind}-${i + 1}`, command: kind === 'queue' ? 'php artisan queue:work --tries=3' : `php artisan ${kind}`,
      username: 'forge', directory: `/home/forge/${env.name}-${env.team_id}`, processes: 1 + Math.floor(random() * 4),
    });
  }
}

// A known secret for the sample events in events/ (npm run invoke). Local demo data only.
const tokens = [{ user_id: 10, token: 'tra_local_demo_only_sample_events_token', name: 'sample events (local demo only)', abilities: ['*'] }];
const snapshot = { teams, users, tokens, environments, servers, clients, projects, daemons, costs };
const path = new URL('../../data/demo-snapshot.json', import.meta.url).pathname;
await writeFile(path, JSON.stringify(snapshot, null, 1) + '\n');
process.stdout.write(`wrote ${path}: ${projects.length} projects, ${daemons.length} daemons\n`);
