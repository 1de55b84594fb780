import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createDocumentClient } from '../commands/store/document-client.ts';
import { importDocument } from './snapshot-file.ts';
import { ensureTable } from '../commands/store/table.ts';
import { createToken } from '../commands/tokens/tokens.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../commands/local/dynamodb-local.ts';
import { loadFunctionHandlers, startLocalServer, type LocalServer } from '../commands/local/server.ts';

/**
 * npm run load [-- --duration 30 --connections 50 --projects 10000 --daemons 2000]
 *
 * Starts DynamoDB Local (or uses DYNAMODB_ENDPOINT) and the local server, imports a sizeable
 * data set, then drives the three endpoints with autocannon (in a worker thread, so the load
 * generator does not share the server's event loop): finances, and pages across the whole of
 * both lists, by id and by slug, with and without per_page. Prints requests per second and
 * p50/p99 latency; exits 1 on any error, timeout or non-2xx answer. Stops everything it started.
 */
const USAGE = 'usage: npm run load -- [--duration <s>] [--connections <n>] [--warmup <s>] [--projects <n>] [--daemons <n>] [--workers <n>]';
const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '30' },
    connections: { type: 'string', default: '50' },
    warmup: { type: 'string', default: '5' },
    projects: { type: 'string', default: '10000' },
    daemons: { type: 'string', default: '2000' },
    workers: { type: 'string', default: '1' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const number = (name: keyof typeof values, min: number) => {
  const value = Number(values[name]);
  if (!Number.isInteger(value) || value < min) {
    process.stderr.write(`--${name} must be an integer of at least ${min}, not "${values[name]}"\n${USAGE}\n`);
    process.exit(1);
  }
  return value;
};
const duration = number('duration', 1);
const connections = number('connections', 1);
const warmup = number('warmup', 0);
const projectCount = number('projects', 1);
const daemonCount = number('daemons', 1);
const workers = number('workers', 0);

// The functions read their configuration from the environment, as on Lambda. Per-request log
// lines would only measure the terminal.
const tableName = `load-${Date.now()}`;
process.env.TABLE_NAME = tableName;
process.env.LOG_LEVEL ??= 'SILENT';

let dynamo: DynamoDbLocal | undefined;
let server: LocalServer | undefined;
let stopping: Promise<void> | undefined;
const stop = () =>
  (stopping ??= (async () => {
    await server?.close().catch(() => {});
    await dynamo?.stop().catch(() => {});
  })());
process.once('SIGINT', () => void stop().then(() => process.exit(130)));
process.once('SIGTERM', () => void stop().then(() => process.exit(143)));

const say = (line: string) => process.stdout.write(`${line}\n`);

/** A big team and a small one; user 1 is in both. Ids have gaps, as real ids do. */
function dataSet() {
  const teams = [{ id: 1, slug: 'load', name: 'Load' }, { id: 2, slug: 'small', name: 'Small' }];
  const environments = [{ id: 1, team_id: 1, name: 'production' }, { id: 2, team_id: 1, name: 'staging' }, { id: 3, team_id: 2, name: 'production' }];
  const servers = [
    { id: 1, team_id: 1, name: 'web-1', monthly_cost: '24.15', currency: 'EUR' },
    { id: 2, team_id: 1, name: 'worker', monthly_cost: 19.9, currency: 'USD' },
    { id: 3, team_id: 2, name: 'small', monthly_cost: '5', currency: 'EUR' },
  ];
  const clients = [{ id: 1, team_id: 1, name: 'Client' }];
  const projects = Array.from({ length: projectCount }, (_, i) => ({
    id: 1_000 + i * 3, team_id: 1, client_id: i % 4 === 0 ? 1 : null, name: `Project ${i + 1}`, slug: `project-${i + 1}`,
    created_at: `2026-${String(1 + (i % 12)).padStart(2, '0')}-15T10:20:30.${i % 1000}+02:00`,
  }));
  for (let i = 0; i < 120; i++) {
    projects.push({ id: 5_000_000 + i, team_id: 2, client_id: null, name: `Small ${i}`, slug: `small-${i}`, created_at: '2026-01-01T00:00:00Z' });
  }
  const daemons = Array.from({ length: daemonCount }, (_, i) => ({
    id: 10 + i * 2, environment_id: 1 + (i % 2), server_id: 1 + (i % 2), name: `queue-${i}`, command: 'php artisan queue:work',
    username: 'forge', directory: '/home/forge/app', processes: 1 + (i % 4),
  }));
  const costs = [{ team_id: 1, label: 'Backups', amount: '5.00', currency: 'EUR' }, { team_id: 2, label: 'Backups', amount: '0.1', currency: 'EUR' }];
  return { teams, users: [{ id: 1, name: 'Load tester', teams: [1, 2] }], environments, servers, clients, projects, daemons, costs };
}

/** The mix: every endpoint, first, middle, last and past-last pages, by id and by slug, interleaved. */
function requestMix(): { path: string }[] {
  const groups: Record<'finances' | 'projects' | 'daemons', string[]> = { finances: [], projects: [], daemons: [] };
  for (const team of ['load', '1']) {
    groups.finances.push(`/api/${team}/finances`);
    for (const [resource, total] of [['projects', projectCount], ['daemons', daemonCount]] as const) {
      for (const perPage of [undefined, 5, 50]) {
        const last = Math.max(Math.ceil(total / (perPage ?? 20)), 1);
        for (const page of new Set([1, 2, Math.ceil(last / 3), Math.ceil(last / 2), last, last + 1])) {
          groups[resource].push(`/api/${team}/${resource}?${perPage === undefined ? '' : `per_page=${perPage}&`}page=${page}`);
        }
      }
    }
  }
  groups.finances.push('/api/small/finances', '/api/2/finances');
  groups.projects.push('/api/small/projects', '/api/2/projects?per_page=50&page=3');
  groups.daemons.push('/api/small/daemons');
  // Round robin: every connection asks each endpoint in turn from its first request on.
  const paths: string[] = [];
  const longest = Math.max(groups.projects.length, groups.daemons.length);
  for (let i = 0; i < longest; i++) {
    paths.push(groups.finances[i % groups.finances.length]!);
    if (i < groups.projects.length) paths.push(groups.projects[i]!);
    if (i < groups.daemons.length) paths.push(groups.daemons[i]!);
  }
  return paths.map((path) => ({ path }));
}

function run(options: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(options, (error, result) => (error ? reject(error) : resolve(result)));
  });
}

let failed = false;
try {
  let endpoint = process.env.DYNAMODB_ENDPOINT?.trim();
  if (!endpoint) {
    say('starting DynamoDB Local (in memory)...');
    dynamo = await startDynamoDbLocal();
    endpoint = dynamo.endpoint;
  }
  process.env.DYNAMODB_ENDPOINT = endpoint;
  const doc = createDocumentClient({ endpoint, maxAttempts: 8, requestTimeoutMs: 30_000 });
  await ensureTable(doc, tableName);

  const document = dataSet();
  const importStarted = performance.now();
  const summary = await importDocument(doc, tableName, document);
  say(`imported ${summary.items} projects and daemons in ${((performance.now() - importStarted) / 1000).toFixed(1)} s into ${tableName} at ${endpoint}`);
  const secret = await createToken(doc, tableName, { userId: 1, abilities: ['*'], name: 'load test', expiresAt: null });
  doc.destroy();

  server = await startLocalServer({ handlers: await loadFunctionHandlers() });
  const requests = requestMix();
  const common: autocannon.Options = {
    url: server.url,
    connections,
    headers: { authorization: `Bearer ${secret}`, accept: 'application/json' },
    requests,
    timeout: 10,
    ...(workers > 0 ? { workers } : {}),
  };
  // A sanity check before the load: every path of the mix answers 200.
  for (const { path } of requests) {
    const res = await fetch(server.url + path, { headers: { authorization: `Bearer ${secret}` } });
    if (res.status !== 200) throw new Error(`${path} answered ${res.status} before the load: ${await res.text()}`);
  }
  if (warmup > 0) {
    say(`warming up for ${warmup} s...`);
    await run({ ...common, duration: warmup });
  }
  say(`load: ${connections} connections for ${duration} s over ${requests.length} paths (finances, daemons and projects pages) at ${server.url}`);
  const result = await run({ ...common, duration });

  const total = result.requests.total;
  const rps = total / ((result.finish.getTime() - result.start.getTime()) / 1000);
  say('');
  say(`requests:   ${total.toLocaleString('en')} in ${duration} s, ${Math.round(rps).toLocaleString('en')} requests/s (mean of per-second counts ${Math.round(result.requests.average).toLocaleString('en')}/s)`);
  say(`latency:    p50 ${result.latency.p50} ms, p90 ${result.latency.p90} ms, p99 ${result.latency.p99} ms, max ${result.latency.max} ms`);
  say(`throughput: ${(result.throughput.average / 1024 / 1024).toFixed(2)} MiB/s`);
  say(`answers:    2xx ${result['2xx']}, non-2xx ${result.non2xx}, errors ${result.errors}, timeouts ${result.timeouts}`);
  failed = result.errors > 0 || result.timeouts > 0 || result.non2xx > 0 || result['2xx'] === 0;

  // After the load, the answers are still right.
  const check = await fetch(`${server.url}/api/load/projects?per_page=50&page=2`, { headers: { authorization: `Bearer ${secret}` } });
  const body = (await check.json()) as { meta?: { total?: number }; data?: { id: number }[] };
  if (check.status !== 200 || body.meta?.total !== projectCount || body.data?.[0]?.id !== 1_000 + 50 * 3) {
    say(`after the load, /api/load/projects?per_page=50&page=2 answered ${check.status} ${JSON.stringify(body).slice(0, 200)}`);
    failed = true;
  }
  say(failed ? '\nFAILED: there were errors or non-2xx answers' : '\nOK: every answer was a 2xx');
} catch (error) {
  process.stderr.write(`load test failed: ${(error as Error).stack ?? error}\n`);
  failed = true;
} finally {
  await stop();
}
process.exit(failed ? 1 : 0);
