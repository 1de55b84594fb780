import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { deflateRawSync } from 'node:zlib';
import { App, Stack } from 'aws-cdk-lib';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { functionBasics, functionEntry, PROJECT_ROOT } from '../infra/functions.ts';
import { TeamResourcesStack } from '../infra/stack.ts';
import { FUNCTION_MEMORY_MB } from '../shared/function-settings.ts';
import { findBundledFunctions } from '../commands/local/bundled-handlers.ts';
import { median } from './stats.ts';

/**
 * Parts 3 and 4: the functions as deployed. `synthBundles` synthesizes the stack as `npm run synth`
 * does (the NodejsFunction bundles, built by esbuild with infra/functions.ts bundlingOptions())
 * and, beside it, the bare handler (bare-handler.ts) as a NodejsFunction with the very same
 * bundling options, runtime and architecture. Each bundle then runs in fresh Node processes with
 * the environment the template gives its function (NODE_OPTIONS included) and Lambda's variables.
 */

export interface Bundle {
  name: string;
  file: string;
  /** The function's environment from the template (TABLE_NAME resolved by the caller). */
  environment: Record<string, string>;
  bytes: number;
  mapBytes: number;
  /** index.mjs and its map deflated as a zip would hold them: roughly the uploaded code size. */
  zippedBytes: number;
}

export interface Bundles {
  functions: Bundle[];
  /** The plain client and one Query (bare-query.ts): the cold-start floor. */
  bareQuery: Bundle;
  /** The plain client making a function's calls (bare-handler.ts). */
  bare: Bundle;
  /** The projects function bundled without the esbuild aliases: node:http as an ES import, as before. */
  projectsHttpImport: Bundle;
}

const BARE_ENTRIES = {
  BareOneQuery: fileURLToPath(new URL('./bare-query.ts', import.meta.url)),
  BareTwin: fileURLToPath(new URL('./bare-handler.ts', import.meta.url)),
};
const PROJECTS_HTTP_IMPORT = 'ProjectsHttpImport';

export function synthBundles(outdir: string): Bundles {
  const context = (JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> }).context;
  const app = new App({ outdir, context });
  new TeamResourcesStack(app, 'Bench');
  const bareStack = new Stack(app, 'BenchBare');
  for (const [id, entry] of Object.entries(BARE_ENTRIES)) {
    new NodejsFunction(bareStack, id, functionBasics(entry));
  }
  const projects = functionBasics(functionEntry('projects'));
  new NodejsFunction(bareStack, PROJECTS_HTTP_IMPORT, { ...projects, bundling: { ...projects.bundling, esbuildArgs: {} } });
  app.synth();

  const template = readJson<Template>(join(outdir, 'Bench.template.json'));
  const functions = Object.values(findBundledFunctions(outdir, 'Bench')).map((fn) =>
    bundle(fn.route, fn.file, environmentOf(template.Resources?.[fn.logicalId])),
  );
  const bareTemplate = readJson<Template>(join(outdir, 'BenchBare.template.json'));
  const bareAssets = readJson<{ files?: Record<string, { source: { path: string } }> }>(join(outdir, 'BenchBare.assets.json'));
  const bareFile = (id: keyof typeof BARE_ENTRIES | typeof PROJECTS_HTTP_IMPORT) => {
    const [, resource] = Object.entries(bareTemplate.Resources ?? {}).find(([logicalId, r]) => r.Type === 'AWS::Lambda::Function' && logicalId.startsWith(id)) ?? [];
    const s3Key = resource?.Properties?.Code?.S3Key;
    const asset = Object.entries(bareAssets.files ?? {}).find(([hash]) => s3Key === `${hash}.zip`)?.[1];
    const file = asset && join(outdir, asset.source.path, 'index.mjs');
    if (!file || !existsSync(file)) throw new Error(`no bundle for ${id} in ${outdir}`);
    return file;
  };
  return {
    functions,
    bareQuery: bundle('bare: 1 Query', bareFile('BareOneQuery'), {}),
    bare: bundle('bare handler', bareFile('BareTwin'), {}),
    projectsHttpImport: bundle('projects, node:http as an ES import', bareFile(PROJECTS_HTTP_IMPORT), functions.find((fn) => fn.name === 'projects')!.environment),
  };
}

interface Template {
  Resources?: Record<string, { Type: string; Properties?: { Code?: { S3Key?: unknown }; Environment?: { Variables?: Record<string, unknown> } } }>;
}

function environmentOf(resource: Template['Resources'] extends Record<string, infer R> | undefined ? R | undefined : never): Record<string, string> {
  const variables = resource?.Properties?.Environment?.Variables ?? {};
  // Literal values only; TABLE_NAME is a reference to the table, resolved by whoever runs it.
  return Object.fromEntries(Object.entries(variables).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
}

function bundle(name: string, file: string, environment: Record<string, string>): Bundle {
  const code = readFileSync(file);
  const map = existsSync(`${file}.map`) ? readFileSync(`${file}.map`) : Buffer.alloc(0);
  return {
    name, file, environment,
    bytes: statSync(file).size,
    mapBytes: map.length,
    zippedBytes: deflateRawSync(code, { level: 9 }).length + (map.length ? deflateRawSync(map, { level: 9 }).length : 0),
  };
}

function readJson<T>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

/** The variables Lambda sets in a nodejs24.x function, pointed at DynamoDB Local. */
export function lambdaEnvironment(functionName: string, endpoint: string, tableName: string, own: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    LANG: 'en_US.UTF-8',
    TZ: ':UTC',
    AWS_REGION: 'eu-west-1',
    AWS_DEFAULT_REGION: 'eu-west-1',
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
    AWS_LAMBDA_FUNCTION_NAME: functionName,
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(FUNCTION_MEMORY_MB),
    AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${functionName}`,
    AWS_LAMBDA_LOG_STREAM_NAME: 'bench',
    // The role's temporary credentials, as Lambda passes them; the default chain finds them.
    AWS_ACCESS_KEY_ID: 'ASIABENCHBENCHBENCH',
    AWS_SECRET_ACCESS_KEY: 'bench-secret-access-key',
    AWS_SESSION_TOKEN: 'bench-session-token',
    // Where DynamoDB is: the SDK's own per-service endpoint variable (the functions' code is unchanged).
    AWS_ENDPOINT_URL_DYNAMODB: endpoint,
    ...own,
    TABLE_NAME: tableName,
  };
}

/** What Lambda passes as the context argument (the fields Powertools and the handlers read). */
const CONTEXT_SOURCE = `(name, id) => ({
  callbackWaitsForEmptyEventLoop: true, functionName: name, functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:eu-west-1:000000000000:function:' + name, memoryLimitInMB: '${FUNCTION_MEMORY_MB}',
  awsRequestId: id, logGroupName: '/aws/lambda/' + name, logStreamName: 'bench',
  getRemainingTimeInMillis: () => 10000,
})`;

/**
 * Both kinds of measurement end when Lambda would post the answer: its Node.js runtime turns the
 * event loop once (a setImmediate) after the handler's promise settles and before it posts the
 * answer to the Runtime API (aws-lambda-nodejs-runtime-interface-client, src/runtime/
 * lifecycle-manager.ts, succeed()), so anything a function leaves for that turn delays the answer.
 *
 * Cold start, in a fresh process: "ready" is when the handler has answered its first request,
 * timed from the process's own time origin (its start). The bundle's import is the Lambda init
 * phase; the first request pays what the SDK defers (credentials, endpoint, connection, signing).
 */
const COLD_CHILD = `
import { writeSync } from 'node:fs';
const booted = performance.now();
const context = (${CONTEXT_SOURCE})(process.env.AWS_LAMBDA_FUNCTION_NAME, 'cold-start');
const event = JSON.parse(process.env.BENCH_EVENT);
const { handler } = await import(process.env.BENCH_BUNDLE);
const imported = performance.now();
const result = await handler(event, context);
// The answer is posted after one turn of the event loop, as Lambda's runtime posts it.
await new Promise((resolve) => setImmediate(resolve));
const ready = performance.now();
const used = process.cpuUsage();
writeSync(3, JSON.stringify({ booted, imported, ready, cpu: (used.user + used.system) / 1000, status: result.statusCode }));
process.exit(0);
`;

export interface ColdSample {
  booted: number;
  imported: number;
  ready: number;
  /** CPU time (ms, user + system, all threads) from the process's start to its first answer. */
  cpu: number;
  status: number;
  logLines: number;
}

export async function coldStart(bundle: Bundle, event: unknown, environment: Record<string, string>): Promise<ColdSample> {
  const { fd3, stdout, stderr, code } = await runChild(COLD_CHILD, {
    ...environment,
    BENCH_BUNDLE: pathToFileURL(bundle.file).href,
    BENCH_EVENT: JSON.stringify(event),
  });
  if (code !== 0 || !fd3) throw new Error(`${bundle.name}: cold start failed (exit ${code}): ${stderr.slice(-2_000)}`);
  const sample = JSON.parse(fd3) as ColdSample;
  if (sample.status !== 200) throw new Error(`${bundle.name}: first request answered ${sample.status}`);
  return { ...sample, logLines: countLines(stdout) };
}

/**
 * Warm: one process holds the function's bundle twice (as deployed, and imported again with
 * LOG_LEVEL=SILENT to show what its log line costs) and the bare bundle, each with its own SDK
 * and connection. Each iteration times one request of each, in rotating order, so drift in the
 * machine's load hits all alike. Each event is parsed before its clock starts.
 */
const WARM_CHILD = `
import { writeSync } from 'node:fs';
const makeContext = ${CONTEXT_SOURCE};
const fnUrl = process.env.BENCH_BUNDLE;
const fn = (await import(fnUrl)).handler;
const savedLevel = process.env.LOG_LEVEL;
process.env.LOG_LEVEL = 'SILENT';
const silent = (await import(fnUrl + '?silent')).handler;
if (savedLevel === undefined) delete process.env.LOG_LEVEL; else process.env.LOG_LEVEL = savedLevel;
const bare = (await import(process.env.BENCH_BARE)).handler;
const fnEvent = process.env.BENCH_EVENT, bareEvent = process.env.BENCH_BARE_EVENT;
const cases = [
  [fn, fnEvent, process.env.AWS_LAMBDA_FUNCTION_NAME],
  [silent, fnEvent, process.env.AWS_LAMBDA_FUNCTION_NAME],
  [bare, bareEvent, 'bare'],
];
const warmup = Number(process.env.BENCH_WARMUP), samples = Number(process.env.BENCH_SAMPLES);
const times = cases.map(() => []), cpu = cases.map(() => 0);
for (let i = 0; i < warmup + samples; i++) {
  for (let k = 0; k < cases.length; k++) {
    const c = (i + k) % cases.length;
    const [handler, text, name] = cases[c];
    const event = JSON.parse(text), context = makeContext(name, 'warm-' + i);
    const cpuStarted = process.cpuUsage();
    const started = performance.now();
    const result = await handler(event, context);
    // The answer is posted after one turn of the event loop, as Lambda's runtime posts it.
    await new Promise((resolve) => setImmediate(resolve));
    const elapsed = performance.now() - started;
    const used = process.cpuUsage(cpuStarted);
    if (result.statusCode !== 200) throw new Error(name + ': status ' + result.statusCode + ' ' + result.body);
    if (i >= warmup) {
      times[c].push(elapsed);
      cpu[c] += (used.user + used.system) / 1000;
    }
  }
}
writeSync(3, JSON.stringify({ fn: times[0], silent: times[1], bare: times[2], cpu: { fn: cpu[0] / samples, silent: cpu[1] / samples, bare: cpu[2] / samples } }));
process.exit(0);
`;

export interface WarmSamples {
  fn: number[];
  silent: number[];
  bare: number[];
  /** Mean CPU time (ms, this process's user + system, all threads) per request. */
  cpu: { fn: number; silent: number; bare: number };
  /** Lines the function wrote on stdout (its access log) per request, as deployed. */
  logLinesPerRequest: number;
}

/** A warm run against its bare twin: p50 ÷ p50, CPU ÷ CPU, and the LOG_LEVEL=SILENT copy's p50 ÷ the twin's. */
export const warmRatio = (r: WarmSamples) => median(r.fn) / median(r.bare);
export const cpuRatio = (r: WarmSamples) => r.cpu.fn / r.cpu.bare;
export const silentRatio = (r: WarmSamples) => median(r.silent) / median(r.bare);

/**
 * `runs` warm runs of each bundle, the bundles in rotating order (run i starts with bundle i mod
 * n), so drift in the machine's load hits all alike; `onRun` sees each run as it ends.
 */
export async function rotatingWarmRuns(
  bundles: Bundle[], runs: number, measure: (bundle: Bundle) => Promise<WarmSamples>,
  onRun: (bundle: Bundle, samples: WarmSamples, run: number) => void = () => {},
): Promise<Map<Bundle, WarmSamples[]>> {
  const results = new Map<Bundle, WarmSamples[]>(bundles.map((bundle) => [bundle, []]));
  for (let run = 0; run < runs; run++) {
    for (let k = 0; k < bundles.length; k++) {
      const bundle = bundles[(run + k) % bundles.length]!;
      const samples = await measure(bundle);
      results.get(bundle)!.push(samples);
      onRun(bundle, samples, run);
    }
  }
  return results;
}

export async function warmRequests(
  bundle: Bundle, event: unknown, bare: Bundle, bareEvent: unknown, environment: Record<string, string>,
  options: { warmup: number; samples: number },
): Promise<WarmSamples> {
  const { fd3, stdout, stderr, code } = await runChild(WARM_CHILD, {
    ...environment,
    BENCH_BUNDLE: pathToFileURL(bundle.file).href,
    BENCH_BARE: pathToFileURL(bare.file).href,
    BENCH_EVENT: JSON.stringify(event),
    BENCH_BARE_EVENT: JSON.stringify(bareEvent),
    BENCH_WARMUP: String(options.warmup),
    BENCH_SAMPLES: String(options.samples),
  });
  if (code !== 0 || !fd3) throw new Error(`${bundle.name}: warm run failed (exit ${code}): ${stderr.slice(-2_000)}`);
  const samples = JSON.parse(fd3) as Omit<WarmSamples, 'logLinesPerRequest'>;
  return { ...samples, logLinesPerRequest: countLines(stdout) / (options.warmup + options.samples) };
}

/**
 * A fresh `node` (this same Node 24 binary) running an ES module from the command line. Its
 * stdout (the functions' log lines) is drained through a pipe, as Lambda's runtime drains it;
 * results come back on file descriptor 3.
 */
const running = new Set<ChildProcess>();

/** Ends the measurement processes still running (when the benchmark is interrupted). */
export function stopChildren(): void {
  for (const child of running) child.kill('SIGKILL');
}

function runChild(source: string, env: Record<string, string>): Promise<{ fd3: string; stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', source], { env, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
    running.add(child);
    child.once('exit', () => running.delete(child));
    const chunks: Record<'fd3' | 'stdout' | 'stderr', string[]> = { fd3: [], stdout: [], stderr: [] };
    child.stdout!.setEncoding('utf8').on('data', (s: string) => chunks.stdout.push(s));
    child.stderr!.setEncoding('utf8').on('data', (s: string) => chunks.stderr.push(s));
    (child.stdio[3] as NodeJS.ReadableStream).setEncoding('utf8').on('data', (s: string) => chunks.fd3.push(s));
    child.once('error', reject);
    child.once('close', (code) => resolve({ fd3: chunks.fd3.join(''), stdout: chunks.stdout.join(''), stderr: chunks.stderr.join(''), code }));
  });
}

const countLines = (text: string) => text.split('\n').filter((line) => line.trim().length > 0).length;
