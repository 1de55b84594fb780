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
  /** Members, the token's user included. */
  members: number;
  costLines: number;
  secret: string;
}

export function benchTeam(id: number, size: number, crowd?: { slug: string; members: number; costLines: number }): BenchTeam {
  return { id, size, slug: crowd?.slug ?? `bench-${size}`, members: crowd?.members ?? 1, costLines: crowd?.costLines ?? 1, secret: `bench-secret-${id}` };
}

const WORDS = ['atlas', 'beacon', 'cobalt', 'delta', 'ember', 'falcon', 'garnet', 'harbor', 'indigo', 'juniper', 'krypton', 'lumen', 'meridian', 'nimbus', 'orbit', 'pioneer'];
const KINDS = ['queue', 'scheduler', 'horizon', 'websockets'];
const userId = (team: BenchTeam, member: number) => team.id * 1_000_000 + member;

function project(team: BenchTeam, i: number) {
  const name = `${WORDS[i % 16]} ${WORDS[(i >> 4) % 16]} ${i + 1}`;
  const day = `2026-${String(1 + (i % 12)).padStart(2, '0')}-${String(1 + (i % 28)).padStart(2, '0')}`;
  // Ids with gaps, as real ids have.
  return { id: team.id * 10_000_000 + 2 * i + 1, team_id: team.id, client_id: null, name, slug: name.replace(/ /g, '-'), created_at: `${day}T0${i % 10}:04:05.${String(i % 1000).padStart(3, '0')}+02:00` };
}

function daemon(team: BenchTeam, i: number) {
  const kind = KINDS[i % 4]!;
  return {
    id: team.id * 10_000_000 + i + 1, environment_id: team.id * 10 + 1 + (i % 2), server_id: team.id * 10 + 1 + (i % 3), name: `${kind}-${i + 1}`,
    command: kind === 'queue' ? 'php artisan queue:work --tries=3' : `php artisan ${kind}`, username: 'forge', directory: `/home/forge/app-${i % 50}`, processes: 1 + (i % 4),
  };
}

/** The size a team needs for its projects and daemons to take about `bytes` of a snapshot. */
export function teamSizeFor(bytes: number): number {
  const sample = benchTeam(1, 0);
  return Math.round(bytes / (JSON.stringify(project(sample, 123_456)).length + JSON.stringify(daemon(sample, 123_456)).length + 2));
}

/** Writes one snapshot holding every team; returns its size in bytes. */
export async function writeSnapshot(path: string, teams: BenchTeam[]): Promise<number> {
  const out = createWriteStream(path);
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, 'drain');
  };
  const array = async <T>(name: string, rows: (team: BenchTeam) => Iterable<T>, last = false) => {
    await write(`"${name}":[`);
    let first = true;
    for (const team of teams) {
      for (const row of rows(team)) {
        await write(`${first ? '' : ','}${JSON.stringify(row)}`);
        first = false;
      }
    }
    await write(last ? ']}' : '],');
  };
  const range = function* <T>(count: number, row: (i: number) => T) {
    for (let i = 0; i < count; i++) yield row(i);
  };
  await write('{');
  await array('teams', (t) => [{ id: t.id, slug: t.slug, name: `Bench team ${t.slug}` }]);
  await array('users', (t) => range(t.members, (i) => ({ id: userId(t, i), name: `Member ${i + 1} of ${t.slug}`, teams: [t.id] })));
  await array('tokens', (t) => [{ user_id: userId(t, 0), token: t.secret, name: 'bench', abilities: ['*'] }]);
  await array('environments', (t) => [1, 2].map((n) => ({ id: t.id * 10 + n, team_id: t.id, name: n === 1 ? 'production' : 'staging' })));
  await array('servers', (t) => [1, 2, 3].map((n) => ({ id: t.id * 10 + n, team_id: t.id, name: `web-${n}`, monthly_cost: '24.15', currency: n === 3 ? 'USD' : 'EUR' })));
  await array('costs', (t) => range(t.costLines, (i) => ({ team_id: t.id, label: `Cost line ${i}: ${WORDS[i % 16]} ${KINDS[i % 4]}`, amount: `${i}.25`, currency: i % 3 ? 'EUR' : 'USD' })));
  await array('projects', (t) => range(t.size, (i) => project(t, i)));
  await array('daemons', (t) => range(t.size, (i) => daemon(t, i)), true);
  out.end();
  await once(out, 'finish');
  return statSync(path).size;
}

export interface ImportRun {
  seconds: number;
  /** Peak resident memory of the import's node process. */
  peakRssMB: number;
  /** What the command printed: its progress lines (non-TTY form) and its summary. */
  output: string[];
}

const IMPORT_COMMAND = fileURLToPath(new URL('../commands/import.ts', import.meta.url));
const PEAK_RSS = fileURLToPath(new URL('./report-peak-rss.ts', import.meta.url));

/** Runs `node commands/import.ts file` against the table, as `npm run import` does. */
export async function importSnapshot(file: string, table: { endpoint: string; tableName: string }, log: (line: string) => void): Promise<ImportRun> {
  const rssFile = `${file}.rss`;
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', PEAK_RSS, IMPORT_COMMAND, file], {
    env: { ...process.env, TABLE_NAME: table.tableName, DYNAMODB_ENDPOINT: table.endpoint, BENCH_PEAK_RSS_FILE: rssFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    stream.setEncoding('utf8').on('data', (text: string) => {
      for (const line of text.split('\n').filter(Boolean)) {
        output.push(line);
        log(`    ${line}`);
      }
    });
  }
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`the import of ${file} failed (exit ${code})`);
  const { maxRSS } = JSON.parse(readFileSync(rssFile, 'utf8')) as { maxRSS: number };
  return { seconds: (performance.now() - started) / 1000, peakRssMB: maxRSS / 1024, output };
}
