import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../infra/functions.ts';
import { lambdaContext } from '../commands/local/api-gateway-event.ts';
import { benchTeam } from './data.ts';
import { startBenchDynamo } from './dynamo.ts';
import { benchEvents } from './events.ts';
import { importTeam } from './import.ts';

/**
 * A CPU profile of warm requests through a function's handler (`npm run profile:warm --
 * [--function projects] [--requests 3000] [--out file.cpuprofile] [--reader-only] [--bundle file]`):
 * DynamoDB Local, a small team, the function's own module (functions/<name>.ts, so names are
 * readable; or a synthesized bundle) called in a loop after a
 * warm-up, profiled with the inspector; it prints self time grouped by where the code lives.
 * What bench part 4 measures as a ratio, this says where it goes.
 */
const { values: args } = parseArgs({ options: {
  function: { type: 'string', default: 'projects' }, requests: { type: 'string', default: '3000' }, out: { type: 'string' },
  // The reader's two calls alone, without the handler chain: what the chain adds is the difference.
  'reader-only': { type: 'boolean', default: false },
  // A bundle (cdk.out/asset.*/index.mjs after npm run synth) instead of the function's source.
  bundle: { type: 'string' },
} });
const dynamo = await startBenchDynamo('profile');
try {
  const { doc } = dynamo;
  const team = benchTeam(1, 200);
  await importTeam(doc, 'profile', team);
  Object.assign(process.env, { TABLE_NAME: 'profile', DYNAMODB_ENDPOINT: dynamo.endpoint, AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand' });
  const name = args.function!;
  const { handler } = (await import(args.bundle ? pathToFileURL(args.bundle).href : `../functions/${name}.ts`)) as { handler: (e: unknown, c: unknown) => Promise<{ statusCode?: number }> };
  const eventText = JSON.stringify((await benchEvents(doc, 'profile', team, 20)).functionEvent(name));
  const { runtime } = await import('../shared/runtime.ts');
  const { hashToken } = await import('../shared/auth/token.ts');
  const reader = runtime().reader;
  const headNow = (await reader.readAccess(hashToken(team.secret), team.slug)).head!;
  const viaReader = async () => {
    if (name === 'finances') return { statusCode: (await reader.readFinanceAccess(hashToken(team.secret), team.slug)).token ? 200 : 500 };
    const resource = name as 'projects' | 'daemons';
    const [a, p] = await Promise.all([reader.readAccess(hashToken(team.secret), team.slug), reader.prefetchPage(headNow, resource, { first: 21, last: 40 })]);
    return { statusCode: a.token && 'items' in p.result ? 200 : 500 };
  };
  const run = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const event = JSON.parse(eventText) as unknown;
      const result = args['reader-only'] ? await viaReader() : await handler(event, lambdaContext(name, 10_000, `p-${i}`));
      if (result.statusCode !== 200) throw new Error(`status ${result.statusCode}`);
    }
  };
  const n = Number(args.requests);
  await run(500);
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 50 });
  await session.post('Profiler.start');
  const started = performance.now();
  const cpu = process.cpuUsage();
  await run(n);
  const used = process.cpuUsage(cpu);
  const { profile } = await session.post('Profiler.stop');
  process.stderr.write(`${n} requests, ${((performance.now() - started) / n).toFixed(3)} ms each, CPU ${(((used.user + used.system) / 1000) / n * 1000).toFixed(0)} µs each\n`);
  if (args.out) writeFileSync(args.out, JSON.stringify(profile));
  // Self time per node, grouped.
  type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number };
  const nodes = new Map<number, Node>((profile.nodes as Node[]).map((node) => [node.id, node]));
  const dt = new Map<number, number>();
  (profile.samples ?? []).forEach((id: number, i: number) => dt.set(id, (dt.get(id) ?? 0) + (profile.timeDeltas?.[i] ?? 0)));
  const total = [...dt.values()].reduce((a, b) => a + b, 0);
  const ownFile = `${pathToFileURL(PROJECT_ROOT).href}/`;
  const groups = new Map<string, number>();
  const fns = new Map<string, number>();
  for (const [id, time] of dt) {
    const { url, functionName, lineNumber } = nodes.get(id)!.callFrame;
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
    const group = m ? m[1]! : url.includes('/shared/') ? 'shared/' : url.includes('/functions/') ? 'functions/' : url.startsWith('node:') ? 'node:' + url.slice(5).split('/')[0] : url === '' ? `(${functionName || 'native'})` : url.replace(ownFile, '');
    groups.set(group, (groups.get(group) ?? 0) + time);
    const key = `${functionName || '(anonymous)'} ${url.replace(/.*node_modules\//, '').replace(ownFile, '')}:${lineNumber}`;
    fns.set(key, (fns.get(key) ?? 0) + time);
  }
  const pct = (t: number) => `${((t / total) * 100).toFixed(1)}%`;
  process.stderr.write('\nby package:\n');
  for (const [g, t] of [...groups].sort((a, b) => b[1] - a[1]).slice(0, 25)) process.stderr.write(`  ${pct(t).padStart(6)}  ${(t / n).toFixed(1).padStart(6)} µs/req  ${g}\n`);
  process.stderr.write('\ntop functions (self):\n');
  for (const [f, t] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, 40)) process.stderr.write(`  ${pct(t).padStart(6)}  ${(t / n).toFixed(1).padStart(6)} µs/req  ${f}\n`);
} finally {
  await dynamo.stop();
}
