import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { functionBasics, PROJECT_ROOT } from '../infra/functions.ts';
import { TeamResourcesStack } from '../infra/stack.ts';
import { FUNCTION_MEMORY_MB } from '../shared/api/function-settings.ts';
import { ROUTE_METADATA_KEY } from '../shared/api/routes.ts';
import type { Pair } from './report.ts';

/**
 * The functions as deployed: the stack synthesized as `npm run synth` does (esbuild, through
 * infra/functions.ts functionBasics()), and beside it the bare twin (bare-twin.ts) bundled by
 * the same functionBasics(). Each bundle runs in fresh Node processes with its function's
 * environment from the template and the variables Lambda sets.
 */
interface Bundle {
  name: string;
  file: string;
  /** The literal variables of the function's environment in the template. */
  environment: Record<string, string>;
}

interface Resource {
  Type: string;
  Metadata?: Record<string, string>;
  Properties: { Environment?: { Variables?: Record<string, unknown> } };
}

export function synthBundles(outdir: string): { functions: Bundle[]; twin: Bundle } {
  const { context } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  // Asset metadata names each function's bundle directory in the template, as the CDK CLI asks for.
  const app = new App({ outdir, context: { ...context, 'aws:cdk:enable-asset-metadata': true } });
  new TeamResourcesStack(app, 'Bench');
  new NodejsFunction(
    new Stack(app, 'BenchTwin'),
    'BareTwin',
    functionBasics(fileURLToPath(new URL('./bare-twin.ts', import.meta.url))),
  );
  app.synth();
  const bundles = ['Bench', 'BenchTwin'].flatMap((stack) => {
    const { Resources } = JSON.parse(readFileSync(join(outdir, `${stack}.template.json`), 'utf8')) as {
      Resources: Record<string, Resource>;
    };
    return Object.values(Resources)
      .filter((r) => r.Type === 'AWS::Lambda::Function' && r.Metadata?.['aws:asset:path'])
      .map((r) => ({
        name: r.Metadata![ROUTE_METADATA_KEY] ?? 'bare twin',
        file: join(outdir, r.Metadata!['aws:asset:path']!, 'index.mjs'),
        environment: Object.fromEntries(
          Object.entries(r.Properties.Environment?.Variables ?? {}).filter(
            (v): v is [string, string] => typeof v[1] === 'string',
          ),
        ),
      }));
  });
  return {
    functions: bundles.filter((b) => ['projects', 'daemons', 'finances'].includes(b.name)),
    twin: bundles.find((b) => b.name === 'bare twin')!,
  };
}

/** The variables Lambda sets in a nodejs24.x function, with DynamoDB pointed at DynamoDB Local. */
export function lambdaEnvironment(fn: Bundle, endpoint: string, tableName: string): Record<string, string> {
  return {
    PATH: process.env.PATH!,
    TZ: ':UTC',
    AWS_REGION: process.env.AWS_REGION ?? 'eu-west-1',
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
    AWS_LAMBDA_FUNCTION_NAME: fn.name,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(FUNCTION_MEMORY_MB),
    // Credentials through the default chain, as Lambda passes the role's; DynamoDB Local keeps a
    // database per access key and region, so they are the key the import and the table used.
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_SESSION_TOKEN: 'bench',
    // The SDK's own per-service endpoint variable: the functions' code is unchanged.
    AWS_ENDPOINT_URL_DYNAMODB: endpoint,
    ...fn.environment,
    TABLE_NAME: tableName,
    // The fields of Lambda's context object that the handlers read (the child adds the clock).
    BENCH_CONTEXT: JSON.stringify({
      functionName: fn.name,
      functionVersion: '$LATEST',
      invokedFunctionArn: `arn:aws:lambda:eu-west-1:000000000000:function:${fn.name}`,
      memoryLimitInMB: String(FUNCTION_MEMORY_MB),
      awsRequestId: 'bench',
    }),
  };
}

/**
 * One cold start in a fresh process: the bundle's import (Lambda's init phase), then its first
 * request (what the SDK defers: credentials, endpoint, connection, signing), ended one turn of
 * the event loop after the handler settles, where Lambda's Node.js runtime posts the answer
 * (aws-lambda-nodejs-runtime-interface-client, lifecycle-manager.ts, succeed()). The figure is
 * the process's CPU time (user + system) from its start: on a shared machine it moves far less
 * than wall time.
 */
const COLD_START = `
import { writeSync } from 'node:fs';
const { handler } = await import(process.env.BENCH_BUNDLE);
const context = { ...JSON.parse(process.env.BENCH_CONTEXT), getRemainingTimeInMillis: () => 10000 };
const { statusCode } = await handler(JSON.parse(process.env.BENCH_EVENT), context);
await new Promise((resolve) => setImmediate(resolve));
const used = process.cpuUsage();
writeSync(3, JSON.stringify(statusCode === 200 ? (used.user + used.system) / 1000 : 'status ' + statusCode));
process.exit(0);
`;

/** Milliseconds of CPU from a fresh process's start to its first answer. */
export async function coldStart(bundle: Bundle, event: unknown, environment: Record<string, string>): Promise<number> {
  return (await runChild(bundle, ['--input-type=module', '-e', COLD_START], {
    ...environment,
    BENCH_BUNDLE: pathToFileURL(bundle.file).href,
    BENCH_EVENT: JSON.stringify(event),
  })) as number;
}

/** One warm run in a fresh process (warm-run.ts): the function's p50 and its twin's, by tinybench. */
export async function warmRun(
  fn: Bundle,
  twin: Bundle,
  events: Record<keyof Pair, unknown>,
  environment: Record<string, string>,
  options: { ms: number; twinFirst: boolean },
): Promise<Pair> {
  return (await runChild(fn, [fileURLToPath(new URL('./warm-run.ts', import.meta.url))], {
    ...environment,
    BENCH_FUNCTION: pathToFileURL(fn.file).href,
    BENCH_TWIN: pathToFileURL(twin.file).href,
    BENCH_EVENTS: JSON.stringify(events),
    BENCH_MS: String(options.ms),
    BENCH_TWIN_FIRST: String(options.twinFirst),
  })) as Pair;
}

/**
 * A fresh `node` whose stdout (the functions' log lines) drains through a pipe, as on Lambda; its
 * result comes as JSON on fd 3.
 */
async function runChild(bundle: Bundle, args: string[], env: Record<string, string>): Promise<unknown> {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
  let result = '';
  let errors = '';
  child.stdout!.resume();
  child.stderr!.setEncoding('utf8').on('data', (text: string) => (errors += text));
  (child.stdio[3] as NodeJS.ReadableStream).setEncoding('utf8').on('data', (text: string) => (result += text));
  const [code] = (await once(child, 'close')) as [number | null];
  const value = code === 0 && result ? (JSON.parse(result) as unknown) : `exit ${code}: ${errors.slice(-2_000)}`;
  if (typeof value === 'string') throw new Error(`${bundle.name}: the measurement failed (${value})`);
  return value;
}
