import { writeSync } from 'node:fs';
import { setImmediate } from 'node:timers/promises';
import { Bench } from 'tinybench';

/**
 * One warm run (bundles.ts warmRun starts it in the function's Lambda environment): the
 * function's bundle and the bare twin's, each warm, timed by tinybench one after the other, in
 * an order that alternates between runs. A request is the handler call and the turn of the event
 * loop Lambda's runtime takes before it posts the answer. Writes both p50s on fd 3.
 */
type Handler = (event: unknown, context: unknown) => Promise<{ statusCode?: number }>;
const env = process.env as Record<string, string>;
const events = JSON.parse(env.BENCH_EVENTS!) as { fn: unknown; twin: unknown };
const handlers: Record<string, Handler> = {
  fn: (await import(env.BENCH_FUNCTION!)).handler,
  twin: (await import(env.BENCH_TWIN!)).handler,
};
const context = { ...JSON.parse(env.BENCH_CONTEXT!), getRemainingTimeInMillis: () => 10_000 };

const bench = new Bench({ time: Number(env.BENCH_MS), warmupTime: Number(env.BENCH_MS) / 4, throws: true });
for (const name of env.BENCH_TWIN_FIRST === 'true' ? (['twin', 'fn'] as const) : (['fn', 'twin'] as const)) {
  let event: unknown;
  bench.add(
    name,
    async () => {
      const { statusCode } = await handlers[name]!(event, context);
      await setImmediate();
      if (statusCode !== 200) throw new Error(`${name} answered ${statusCode}`);
    },
    {
      beforeEach: () => {
        event = structuredClone(events[name]);
      },
    },
  );
}
await bench.run();
const p50 = (name: string) => (bench.getTask(name)!.result as { latency: { p50: number } }).latency.p50;
writeSync(3, JSON.stringify({ fn: p50('fn'), twin: p50('twin') }));
process.exit(0);
