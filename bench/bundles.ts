import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { functionBasics, PROJECT_ROOT } from '../infra/functions.ts';
import { TeamResourcesStack } from '../infra/stack.ts';
import { FUNCTION_MEMORY_MB } from '../shared/function-settings.ts';
import { ROUTE_METADATA_KEY } from '../shared/routes.ts';

/**
 * The functions as deployed: the stack synthesized as `npm run synth` does (esbuild, through
 * infra/functions.ts functionBasics()), and beside it the bare twin (bare-twin.ts) bundled by
 * the same functionBasics(). Each bundle runs in fresh Node processes with its function's
 * environment from the template and the variables Lambda sets.
 */
export interface Bundle {
  name: string;
  file: string;
  /** The literal variables of the function's environment in the template. */
  environment: Record<string, string>;
}

const TWIN = 'bare twin';

export function synthBundles(outdir: string): { functions: Bundle[]; twin: Bundle } {
  const { context } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };
  // Asset metadata names each function's bundle directory in the template, as the CDK CLI asks for.
  const app = new App({ outdir, context: { ...context, 'aws:cdk:enable-asset-metadata': true } });
  new TeamResourcesStack(app, 'Bench');
  const twinStack = new Stack(app, 'BenchTwin');
  new NodejsFunction(twinStack, 'BareTwin', functionBasics(fileURLToPath(new URL('./bare-twin.ts', import.meta.url))));
  app.synth();
  const bundles = ['Bench', 'BenchTwin'].flatMap((stack) => {
    const template = JSON.parse(readFileSync(join(outdir, `${stack}.template.json`), 'utf8')) as { Resources: Record<string, Resource> };
    return Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function' && r.Metadata?.['aws:asset:path']).map((r): Bundle => ({
      name: stack === 'BenchTwin' ? TWIN : String(r.Metadata?.[ROUTE_METADATA_KEY]),
      file: join(outdir, String(r.Metadata!['aws:asset:path']), 'index.mjs'),
      environment: Object.fromEntries(Object.entries(r.Properties.Environment?.Variables ?? {}).filter((v): v is [string, string] => typeof v[1] === 'string')),
    }));
  });
  return { functions: bundles.filter((b) => ['projects', 'daemons', 'finances'].includes(b.name)), twin: bundles.find((b) => b.name === TWIN)! };
}

interface Resource {
  Type: string;
  Metadata?: Record<string, unknown>;
  Properties: { Environment?: { Variables?: Record<string, unknown> } };
}

/** The variables Lambda sets in a nodejs24.x function, with DynamoDB pointed at DynamoDB Local. */
export function lambdaEnvironment(bundle: Bundle, endpoint: string, tableName: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'en_US.UTF-8', TZ: ':UTC', AWS_REGION: 'eu-west-1', AWS_DEFAULT_REGION: 'eu-west-1',
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x', AWS_LAMBDA_FUNCTION_NAME: bundle.name, AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(FUNCTION_MEMORY_MB),
    // The role's temporary credentials, as Lambda passes them to the default chain.
    AWS_ACCESS_KEY_ID: 'ASIABENCH', AWS_SECRET_ACCESS_KEY: 'bench-secret', AWS_SESSION_TOKEN: 'bench-session',
    // The SDK's own per-service endpoint variable: the functions' code is unchanged.
    AWS_ENDPOINT_URL_DYNAMODB: endpoint,
    ...bundle.environment,
    TABLE_NAME: tableName,
  };
}

/**
 * One cold start in a fresh process: the bundle's import (Lambda's init phase), then its first
 * request (what the SDK defers: credentials, endpoint, connection, signing), ended one turn of
 * the event loop after the handler settles, where Lambda's Node.js runtime posts the answer
 * (aws-lambda-nodejs-runtime-interface-client, lifecycle-manager.ts, succeed()). It reports the
 * process's CPU time (user + system) and wall time from its own start.
 */
const COLD_START = `
import { writeSync } from 'node:fs';
const { handler } = await import(process.env.BENCH_BUNDLE);
const context = { functionName: process.env.AWS_LAMBDA_FUNCTION_NAME, functionVersion: '$LATEST', invokedFunctionArn: 'arn:aws:lambda:eu-west-1:000000000000:function:bench', memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE, awsRequestId: 'cold', getRemainingTimeInMillis: () => 10000 };
const result = await handler(JSON.parse(process.env.BENCH_EVENT), context);
await new Promise((resolve) => setImmediate(resolve));
const ready = performance.now(), used = process.cpuUsage();
writeSync(3, JSON.stringify({ ready, cpu: (used.user + used.system) / 1000, status: result.statusCode }));
process.exit(0);
`;

export interface ColdStart {
  /** Milliseconds of CPU, and of wall time, from the process's start to its first answer. */
  cpu: number;
  ready: number;
}

export async function coldStart(bundle: Bundle, event: unknown, environment: Record<string, string>): Promise<ColdStart> {
  const sample = JSON.parse(await runChild(bundle, ['--input-type=module', '-e', COLD_START], { ...environment, BENCH_BUNDLE: pathToFileURL(bundle.file).href, BENCH_EVENT: JSON.stringify(event) })) as ColdStart & { status: number };
  if (sample.status !== 200) throw new Error(`${bundle.name}: first request answered ${sample.status}`);
  return sample;
}

export interface WarmRun {
  /** Median milliseconds per request, of the function and of its twin. */
  fn: number;
  twin: number;
  samples: number;
}

/** One warm run in a fresh process (warm-run.ts): the function and its twin, timed by tinybench. */
export async function warmRun(fn: Bundle, twin: Bundle, events: { fn: unknown; twin: unknown }, environment: Record<string, string>, options: { ms: number; twinFirst: boolean }): Promise<WarmRun> {
  return JSON.parse(await runChild(fn, [fileURLToPath(new URL('./warm-run.ts', import.meta.url))], {
    ...environment,
    BENCH_FUNCTION: pathToFileURL(fn.file).href, BENCH_TWIN: pathToFileURL(twin.file).href,
    BENCH_EVENTS: JSON.stringify(events), BENCH_MS: String(options.ms), BENCH_TWIN_FIRST: String(options.twinFirst),
  })) as WarmRun;
}

const running = new Set<ChildProcess>();

/** Ends the measurement processes still running (an interrupted benchmark). */
export function stopChildren(): void {
  for (const child of running) child.kill('SIGKILL');
}

/** A fresh `node` whose stdout (the functions' log lines) drains through a pipe, as on Lambda; its result comes on fd 3. */
function runChild(bundle: Bundle, args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
    running.add(child);
    let result = '';
    let stderr = '';
    child.stdout!.resume();
    child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr = (stderr + s).slice(-2_000)));
    (child.stdio[3] as NodeJS.ReadableStream).setEncoding('utf8').on('data', (s: string) => (result += s));
    child.once('error', reject);
    child.once('close', (code) => {
      running.delete(child);
      if (code === 0 && result) resolve(result);
      else reject(new Error(`${bundle.name}: the measurement process failed (exit ${code}): ${stderr}`));
    });
  });
}
