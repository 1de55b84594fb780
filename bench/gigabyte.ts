import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../infra/functions.ts';

/**
 * Part 5: a snapshot of about 1 GB whose bulk is projects and daemons, written as a stream (it
 * never exists in memory), imported by the real command (`node commands/import.ts file`, both
 * passes) into a table of its own. Reports the file, items per second of the whole import and of
 * pass 2, and the peak resident memory of the import's node process (getrusage's maxRSS, written
 * at exit by bench/report-peak-rss.ts).
 */
export interface GigabyteRun {
  bytes: number;
  teams: number;
  items: number;
  /** Pass 1: from the start of the command to the first item written. */
  validateS: number;
  /** Pass 2 and the rest: from the first item written to the command's exit. */
  importS: number;
  totalS: number;
  peakRssMB: number;
  /** CPU time of the import's node process (the rest of the wall time is DynamoDB Local's and waiting). */
  cpuS: number;
  progress: string[];
}

const TEAMS = 4;
const WORDS = ['atlas', 'beacon', 'cobalt', 'delta', 'ember', 'falcon', 'garnet', 'harbor', 'indigo', 'juniper', 'krypton', 'lumen', 'meridian', 'nimbus', 'orbit', 'pioneer'];

/** Writes the snapshot, deterministic, to about `targetBytes`: half projects, half daemons, over 4 teams. */
async function writeBulkSnapshot(path: string, targetBytes: number): Promise<{ items: number }> {
  const out = createWriteStream(path);
  let bytes = 0;
  const write = async (text: string) => {
    bytes += Buffer.byteLength(text);
    if (!out.write(text)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  };
  const teams = Array.from({ length: TEAMS }, (_, i) => ({ id: i + 1, slug: `gigabyte-${i + 1}`, name: `Gigabyte team ${i + 1}` }));
  await write(`{"teams":${JSON.stringify(teams)},`);
  await write(`"users":${JSON.stringify(teams.map((t) => ({ id: 100 + t.id, name: `User ${t.id}`, teams: [t.id] })))},`);
  await write(`"tokens":${JSON.stringify(teams.map((t) => ({ user_id: 100 + t.id, token: `gigabyte-secret-${t.id}`, name: 'bench', abilities: ['*'] })))},`);
  await write(`"environments":${JSON.stringify(teams.map((t) => ({ id: t.id, team_id: t.id, name: 'production' })))},`);
  await write(`"servers":${JSON.stringify(teams.map((t) => ({ id: t.id, team_id: t.id, name: 'web-1', monthly_cost: '24.15', currency: 'EUR' })))},`);
  let items = 0;
  await write('"projects":[');
  for (let i = 0; bytes < targetBytes / 2; i++, items++) {
    const name = `${WORDS[i % 16]} ${WORDS[(i >> 4) % 16]} ${i + 1}`;
    await write(`${i ? ',' : ''}${JSON.stringify({
      id: 2 * i + 1, team_id: (i % TEAMS) + 1, client_id: null, name, slug: name.replace(/ /g, '-'),
      created_at: `2026-${String(1 + (i % 12)).padStart(2, '0')}-${String(1 + (i % 28)).padStart(2, '0')}T0${i % 10}:04:05.${String(i % 1000).padStart(3, '0')}+02:00`,
    })}`);
  }
  await write('],"daemons":[');
  for (let i = 0; bytes < targetBytes; i++, items++) {
    await write(`${i ? ',' : ''}${JSON.stringify({
      id: i + 1, environment_id: (i % TEAMS) + 1, server_id: (i % TEAMS) + 1, name: `queue-${i + 1}`,
      command: 'php artisan queue:work --tries=3', username: 'forge', directory: `/home/forge/app-${i % 50}`, processes: 1 + (i % 4),
    })}`);
  }
  await write(']}');
  out.end();
  await new Promise<void>((resolve) => out.once('finish', () => resolve()));
  return { items };
}

export async function importGigabyte(options: { endpoint: string; tableName: string; targetBytes: number; log: (line: string) => void }): Promise<GigabyteRun> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-gigabyte-'));
  try {
    const file = join(dir, 'snapshot.json');
    options.log(`writing a ${(options.targetBytes / 1e9).toFixed(2)} GB snapshot (streamed)...`);
    const { items } = await writeBulkSnapshot(file, options.targetBytes);
    const bytes = statSync(file).size;
    const rssFile = join(dir, 'peak-rss');
    const progress: string[] = [];
    const started = performance.now();
    let writingStarted = 0;
    const child = spawn(process.execPath, [...(process.env.BENCH_NODE_FLAGS ? process.env.BENCH_NODE_FLAGS.split(' ') : []), '--import', join(PROJECT_ROOT, 'bench/report-peak-rss.ts'), join(PROJECT_ROOT, 'commands/import.ts'), file], {
      env: { ...process.env, TABLE_NAME: options.tableName, DYNAMODB_ENDPOINT: options.endpoint, BENCH_PEAK_RSS_FILE: rssFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        if (!writingStarted && line.startsWith('writing items')) writingStarted = performance.now();
        progress.push(line);
        options.log(`    ${line}`);
      }
    });
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    if (code !== 0) throw new Error(`the 1 GB import failed (${code}):\n${stderr.slice(-2_000)}`);
    const ended = performance.now();
    const usage = JSON.parse(readFileSync(rssFile, 'utf8')) as { maxRSS: number; cpuMs: number };
    options.log(`    ${stdout.trim()}`);
    return {
      bytes, teams: TEAMS, items,
      validateS: (writingStarted - started) / 1000,
      importS: (ended - writingStarted) / 1000,
      totalS: (ended - started) / 1000,
      peakRssMB: usage.maxRSS / 1024,
      cpuS: usage.cpuMs / 1000,
      progress,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
