import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { deflateRawSync } from 'node:zlib';
import { App } from 'aws-cdk-lib';
import { routeRequest } from '../commands/local/api-gateway-event.ts';
import { findBundledFunctions } from '../commands/local/bundled-handlers.ts';
import { startDynamoDbLocal } from '../commands/local/dynamodb-local.ts';
import { createDocumentClient } from '../commands/store/document-client.ts';
import { importDocument } from './snapshot-file.ts';
import { ensureTable } from '../commands/store/table.ts';
import { PROJECT_ROOT } from '../infra/functions.ts';
import { TeamResourcesStack } from '../infra/stack.ts';

/**
 * npm run measure:bundles: the two ways to ship the AWS SDK, measured.
 *
 * Synthesizes the stack twice (SDK bundled into each function; SDK left to the runtime), reports
 * each bundle's size, then starts a fresh Node 24 process per run that imports the bundle (the
 * Lambda init phase), calls its handler once (the first request: credential chain, endpoint,
 * signing, one BatchGetItem and one Query against DynamoDB Local) and once more (warm).
 * The external variant resolves the SDK from this project's node_modules, as the runtime's
 * copy would be resolved from /var/runtime.
 */
const { values } = parseArgs({ options: { runs: { type: 'string', default: '15' } } });
const RUNS = Number(values.runs);
const OUT = join(PROJECT_ROOT, 'cdk.out', 'measure');
const context = (JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> }).context;

type Variant = 'bundled' | 'external';
const files: Record<Variant, string> = { bundled: '', external: '' };
rmSync(OUT, { recursive: true, force: true });
const sizeRows: string[] = [];
for (const variant of ['bundled', 'external'] as const) {
  const outdir = join(OUT, variant);
  const app = new App({ outdir, context });
  new TeamResourcesStack(app, 'Measure', { bundleAwsSdk: variant === 'bundled' });
  app.synth();
  const functions = findBundledFunctions(outdir);
  for (const fn of Object.values(functions)) {
    const code = readFileSync(fn.file);
    const map = readFileSync(`${fn.file}.map`);
    const zipped = deflateRawSync(code, { level: 9 }).length + deflateRawSync(map, { level: 9 }).length;
    sizeRows.push(`| ${variant} | ${fn.route} | ${statSync(fn.file).size} | ${map.length} | ~${zipped} |`);
  }
  files[variant] = functions.projects.file;
}
console.log('\n## Bundle sizes (bytes)\n');
console.log('| SDK | function | index.mjs | index.mjs.map | zip (deflated, both files) |');
console.log('|---|---|---:|---:|---:|');
console.log(sizeRows.join('\n'));

// A team with a page of projects, and a token to read it.
const dynamo = await startDynamoDbLocal();
try {
  const tableName = 'measure';
  const doc = createDocumentClient({ endpoint: dynamo.endpoint, maxAttempts: 5, requestTimeoutMs: 30_000 });
  await ensureTable(doc, tableName);
  await importDocument(doc, tableName, {
    teams: [{ id: 1, slug: 'acme', name: 'Acme' }],
    users: [{ id: 10, name: 'Ada', teams: [1] }],
    tokens: [{ user_id: 10, token: 'measure-secret', name: 'measure', abilities: ['*'] }],
    projects: Array.from({ length: 50 }, (_, i) => ({ id: i + 1, team_id: 1, client_id: null, name: `P${i + 1}`, slug: `p-${i + 1}`, created_at: '2026-01-02T05:04:05+02:00' })),
  });
  const routed = routeRequest({
    method: 'GET', target: '/api/acme/projects?per_page=20', sourceIp: '127.0.0.1',
    rawHeaders: ['Host', 'api.example.com', 'Authorization', 'Bearer measure-secret', 'Accept', 'application/json'],
  });
  if (!routed.route) throw new Error('route not found');
  const event = JSON.stringify(routed.event);

  // Runs in a fresh process: time the import, the first call and a warm call.
  const child = `
    const context = { getRemainingTimeInMillis: () => 10000, awsRequestId: 'measure', functionName: 'projects' };
    const cpu = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000; };
    const c0 = cpu(), t0 = performance.now();
    const { handler } = await import(process.env.BUNDLE_URL);
    const t1 = performance.now();
    const first = await handler(JSON.parse(process.env.EVENT), context);
    const t2 = performance.now(), c2 = cpu();
    await handler(JSON.parse(process.env.EVENT), context);
    const t3 = performance.now();
    process.stdout.write(JSON.stringify({ init: t1 - t0, first: t2 - t1, warm: t3 - t2, cpu: c2 - c0, status: first.statusCode, rss: process.memoryUsage().rss }));
  `;
  const env = (variant: Variant, sourceMaps: boolean) => ({
    PATH: process.env.PATH,
    BUNDLE_URL: pathToFileURL(files[variant]).href,
    EVENT: event,
    TABLE_NAME: tableName,
    LOG_LEVEL: 'SILENT',
    // As on Lambda: credentials and region from the environment, the default chain resolves them.
    AWS_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'measure',
    AWS_SECRET_ACCESS_KEY: 'measure',
    AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
    ...(sourceMaps ? { NODE_OPTIONS: '--enable-source-maps' } : {}),
  });
  type Sample = { init: number; first: number; warm: number; cpu: number; status: number; rss: number; process: number };
  const configurations = [
    { variant: 'bundled', sourceMaps: true },
    { variant: 'external', sourceMaps: true },
    { variant: 'bundled', sourceMaps: false },
    { variant: 'external', sourceMaps: false },
  ] as const;
  const samples = configurations.map(() => [] as Sample[]);
  const baseline: number[] = [];
  for (let run = 0; run < RUNS + 1; run++) {
    // Interleaved, so drift in the machine's load hits every configuration alike; run 0 warms the disk cache.
    const started = performance.now();
    spawnSync(process.execPath, ['-e', '0']);
    if (run > 0) baseline.push(performance.now() - started);
    configurations.forEach((c, i) => {
      const begin = performance.now();
      const result = spawnSync(process.execPath, ['--input-type=module', '-e', child], { env: env(c.variant, c.sourceMaps), encoding: 'utf8' });
      const elapsed = performance.now() - begin;
      if (result.status !== 0) throw new Error(`${c.variant}: ${result.stderr}`);
      const sample = JSON.parse(result.stdout) as Sample;
      if (sample.status !== 200) throw new Error(`${c.variant}: status ${sample.status}`);
      if (run > 0) samples[i]!.push({ ...sample, process: elapsed });
    });
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const ms = (x: number) => x.toFixed(1);
  console.log(`\n## Cold start, median of ${RUNS} fresh processes (ms), Node ${process.version}, ${process.arch}\n`);
  console.log(`Node start-up alone (node -e 0): ${ms(median(baseline))} ms\n`);
  console.log('| SDK | --enable-source-maps | import (init) | first request | init + first | CPU during init + first | warm request | whole process | RSS after (MB) |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|');
  configurations.forEach((c, i) => {
    const s = samples[i]!;
    console.log(`| ${c.variant} | ${c.sourceMaps ? 'on' : 'off'} | ${ms(median(s.map((x) => x.init)))} | ${ms(median(s.map((x) => x.first)))} | ${ms(median(s.map((x) => x.init + x.first)))} | ${ms(median(s.map((x) => x.cpu)))} | ${ms(median(s.map((x) => x.warm)))} | ${ms(median(s.map((x) => x.process)))} | ${(median(s.map((x) => x.rss)) / 2 ** 20).toFixed(0)} |`);
  });
} finally {
  await dynamo.stop();
  rmSync(OUT, { recursive: true, force: true });
}
