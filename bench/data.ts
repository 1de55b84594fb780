import { spawn } from 'node:child_process';
import { createWriteStream, readFileSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

/**
 * The benchmark's data: teams of realistic records (names, slugs, ISO times, commands) written
 * as one snapshot file, streamed so that a 1 GB file never exists in memory, and imported by the
 * real command, `node commands/import.ts file`.
 */
export interface BenchTeam {
  id: number;
  slug: string;
  /** Projects, and as many daemons. */
  size: number;
  /** Members, the token's user first. */
  members: number;
  costLines: number;
  secret: string;
}

export function benchTeam(id: number, size: number, more: Partial<BenchTeam> = {}): BenchTeam {
  return { id, size, slug: `bench-${size}`, members: 1, costLines: 1, secret: `bench-secret-${id}`, ...more };
}

const WORDS = [
  'atlas',
  'beacon',
  'cobalt',
  'delta',
  'ember',
  'falcon',
  'garnet',
  'harbor',
  'indigo',
  'juniper',
  'krypton',
  'lumen',
  'meridian',
  'nimbus',
  'orbit',
  'pioneer',
];
const KINDS = ['queue', 'scheduler', 'horizon', 'websockets'];
const two = (n: number) => String(n).padStart(2, '0');

function project(team: BenchTeam, i: number) {
  const name = `${WORDS[i % 16]} ${WORDS[(i >> 4) % 16]} ${i + 1}`;
  const [month, day, hour] = [two(1 + (i % 12)), two(1 + (i % 28)), two(i % 10)];
  const createdAt = `2026-${month}-${day}T${hour}:04:05.${String(i % 1000).padStart(3, '0')}+02:00`;
  // Ids with gaps, as real ids have.
  return {
    id: team.id * 10_000_000 + 2 * i + 1,
    team_id: team.id,
    client_id: null,
    name,
    slug: name.replace(/ /g, '-'),
    created_at: createdAt,
  };
}

function daemon(team: BenchTeam, i: number) {
  const kind = KINDS[i % 4]!;
  return {
    id: team.id * 10_000_000 + i + 1,
    environment_id: team.id * 10 + 1 + (i % 2),
    server_id: team.id * 10 + 1 + (i % 3),
    name: `${kind}-${i + 1}`,
    command: `php artisan ${kind === 'queue' ? 'queue:work --tries=3' : kind}`,
    username: 'forge',
    directory: `/home/forge/app-${i % 50}`,
    processes: 1 + (i % 4),
  };
}

/** The size of a team whose projects and daemons take about `bytes` of a snapshot. */
export function teamSizeFor(bytes: number): number {
  const team = benchTeam(1, 0);
  return Math.round(
    bytes / (JSON.stringify(project(team, 123_456)).length + JSON.stringify(daemon(team, 123_456)).length + 2),
  );
}

/** Writes one snapshot holding every team; returns its size in bytes. */
export async function writeSnapshot(path: string, teams: BenchTeam[]): Promise<number> {
  const out = createWriteStream(path);
  let separator = '{';
  const array = async (
    name: string,
    count: (team: BenchTeam) => number,
    row: (team: BenchTeam, i: number) => unknown,
  ) => {
    let text = `${separator}"${name}":[`;
    let comma = '';
    for (const team of teams) {
      for (let i = 0; i < count(team); i++) {
        text += `${comma}${JSON.stringify(row(team, i))}`;
        comma = ',';
        // Written in chunks, waiting whenever the file falls behind.
        if (text.length > 65_536) {
          if (!out.write(text)) await once(out, 'drain');
          text = '';
        }
      }
    }
    out.write(`${text}]`);
    separator = ',';
  };
  const one = () => 1;
  const userId = (team: BenchTeam, i: number) => team.id * 1_000_000 + i;
  await array('teams', one, (t) => ({ id: t.id, slug: t.slug, name: `Bench team ${t.slug}` }));
  await array(
    'users',
    (t) => t.members,
    (t, i) => ({ id: userId(t, i), name: `Member ${i + 1} of ${t.slug}`, teams: [t.id] }),
  );
  await array('tokens', one, (t) => ({ user_id: userId(t, 0), token: t.secret, name: 'bench', abilities: ['*'] }));
  await array(
    'environments',
    () => 2,
    (t, i) => ({ id: t.id * 10 + 1 + i, team_id: t.id, name: i ? 'staging' : 'production' }),
  );
  await array(
    'servers',
    () => 3,
    (t, i) => ({
      id: t.id * 10 + 1 + i,
      team_id: t.id,
      name: `web-${i + 1}`,
      monthly_cost: '24.15',
      currency: i === 2 ? 'USD' : 'EUR',
    }),
  );
  await array(
    'costs',
    (t) => t.costLines,
    (t, i) => ({
      team_id: t.id,
      label: `Cost line ${i}: ${WORDS[i % 16]}`,
      amount: `${i}.25`,
      currency: i % 3 ? 'EUR' : 'USD',
    }),
  );
  await array('projects', (t) => t.size, project);
  await array('daemons', (t) => t.size, daemon);
  out.end('}');
  await once(out, 'finish');
  return statSync(path).size;
}

export interface ImportRun {
  seconds: number;
  /** Peak resident memory of the import's node process. */
  peakRssMB: number;
}

const IMPORT_COMMAND = fileURLToPath(new URL('../commands/import.ts', import.meta.url));
const PEAK_RSS = fileURLToPath(new URL('./report-peak-rss.ts', import.meta.url));

/**
 * Runs `node commands/import.ts file` against the table, as `npm run import` does; its progress
 * lines show as they come.
 */
export async function importSnapshot(file: string, table: { endpoint: string; tableName: string }): Promise<ImportRun> {
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', PEAK_RSS, IMPORT_COMMAND, file], {
    env: {
      ...process.env,
      TABLE_NAME: table.tableName,
      DYNAMODB_ENDPOINT: table.endpoint,
      BENCH_PEAK_RSS_FILE: `${file}.rss`,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`the import of ${file} failed (exit ${code})`);
  const { maxRSS } = JSON.parse(readFileSync(`${file}.rss`, 'utf8')) as { maxRSS: number };
  return { seconds: (performance.now() - started) / 1000, peakRssMB: maxRSS / 1024 };
}
