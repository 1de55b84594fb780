import { writeSync } from 'node:fs';
import { setImmediate } from 'node:timers/promises';
import { Bench } from 'tinybench';

/**
 * One warm run (started by bundles.ts warmRun, in the function's Lambda environment): the
 * function's bundle and the bare twin's, each warm, timed by tinybench one after the other
 * (the order alternates between runs). A request is the handler call and the turn of the event
 * loop Lambda's runtime takes before it posts the answer. Writes the medians on fd 3.
 */
const env = process.env as Record<string, string>;
const events = JSON.parse(env.BENCH_EVENTS!) as { fn: unknown; twin: unknown };
type Handler = (event: unknown, context: unknown) => Promise<{ statusCode?: number }>;
const handlers = {
  fn: (await import(env.BENCH_FUNCTION!)).handler as Handler,
  twin: (await import(env.BENCH_TWIN!)).handler as Handler,
};
const context = { functionName: env.AWS_LAMBDA_FUNCTION_NAME, functionVersion: '$LATEST', invokedFunctionArn: 'arn:aws:lambda:eu-west-1:000000000000:function:bench', memoryLimitInMB: env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE, awsRequestId: 'warm', getRemainingTimeInMillis: () => 10_000 };

const bench = new Bench({ time: Number(env.BENCH_MS), warmupTime: Number(env.BENCH_MS) / 4, throws: true });
const order = env.BENCH_TWIN_FIRST === 'true' ? (['twin', 'fn'] as const) : (['fn', 'twin'] as const);
for (const name of order) {
  let event: unknown;
  bench.add(name, async () => {
    const result = await handlers[name](event, context);
    await setImmediate();
    if (result.statusCode !== 200) throw new Error(`${name} answered ${result.statusCode}`);
  }, { beforeEach: () => void (event = structuredClone(events[name])) });
}
await bench.run();
const p50 = (name: string) => {
  const result = bench.getTask(name)!.result;
  if (!('latency' in result)) throw new Error(`${name}: ${result.state}`);
  return { p50: result.latency.p50, samples: result.latency.samplesCount };
};
writeSync(3, JSON.stringify({ fn: p50('fn').p50, twin: p50('twin').p50, samples: Math.min(p50('fn').samples, p50('twin').samples) }));
process.exit(0);
