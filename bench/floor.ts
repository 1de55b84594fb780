import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { lambdaContext, routeRequest } from '../commands/local/api-gateway-event.ts';
import { readApiConfig } from '../shared/config.ts';
import { financesHandler, listHandler } from '../shared/http/handlers.ts';
import { API_CALL_BOUND_MS, API_CLIENT_LIMITS, createDynamoDbClient } from '../shared/store/dynamodb-client.ts';
import { TeamReader, type CallReport } from '../shared/store/team-reader.ts';
import { callRecorder } from './calls.ts';
import type { BenchTeam } from './data.ts';
import { median } from './stats.ts';

/**
 * The read path at its floor (issue "Every request at the floor"): what each kind of request
 * asks of DynamoDB, through the real handler chain (shared/http/handlers.ts) in this process,
 * with a client built as the functions build theirs. Every call is counted at the client's
 * middleware stack (calls.ts: which were in flight together) and priced by DynamoDB Local's
 * ConsumedCapacity. Each row's counts must be the same on every one of its requests.
 *
 * "First sight" is a function that has not seen the token (a fresh handler per request: what a
 * new container does); "warm" repeats a request on one handler, as a warm container serves a
 * client that came back.
 */
export interface FloorRow {
  label: string;
  status: number;
  calls: string;
  roundTrips: number;
  rcu: number;
  consistent: string;
  p50Ms: number;
}

type Handler = (event: unknown, context: unknown) => Promise<APIGatewayProxyStructuredResultV2>;

export async function measureFloor(options: { endpoint: string; tableName: string; small: BenchTeam; crowd: BenchTeam; samples: number }): Promise<FloorRow[]> {
  const { tableName, small, crowd, samples } = options;
  const client = createDynamoDbClient({ endpoint: options.endpoint, ...API_CLIENT_LIMITS });
  const recorder = callRecorder(client);
  let calls: CallReport[] = [];
  const runtime = { config: readApiConfig({ TABLE_NAME: tableName }), reader: new TeamReader(client, { tableName, observe: (call) => calls.push(call), callBoundMs: API_CALL_BOUND_MS }) };
  // Handlers with their logger silenced: this part counts DynamoDB work (part 4 times the bundles).
  const fresh = () => {
    const saved = process.env.LOG_LEVEL;
    process.env.LOG_LEVEL = 'SILENT';
    try {
      return { projects: listHandler('projects', runtime) as unknown as Handler, finances: financesHandler(runtime) as unknown as Handler };
    } finally {
      if (saved === undefined) delete process.env.LOG_LEVEL;
      else process.env.LOG_LEVEL = saved;
    }
  };
  const warm = fresh();

  const send = async (handlers: ReturnType<typeof fresh>, target: string, secret: string, ifNoneMatch?: string) => {
    const rawHeaders = ['Host', 'api.example.com', 'Authorization', `Bearer ${secret}`, ...(ifNoneMatch ? ['If-None-Match', ifNoneMatch] : [])];
    const routed = routeRequest({ method: 'GET', target, rawHeaders, sourceIp: '127.0.0.1' });
    if (!routed.route) throw new Error(`no route for ${target}`);
    const handler = handlers[routed.route.name as 'projects' | 'finances'];
    calls = [];
    const started = performance.now();
    const { result, calls: trace } = await recorder.trace(() => handler(routed.event, lambdaContext(routed.route.name, 10_000, 'bench')));
    const latency = performance.now() - started;
    return {
      result, latency, roundTrips: trace.sequentialRoundTrips,
      calls,
      operations: [...trace.operations].sort(),
    };
  };

  const row = async (label: string, request: () => ReturnType<typeof send>, expectStatus: number): Promise<FloorRow> => {
    const latencies: number[] = [];
    let first: FloorRow | undefined;
    for (let i = 0; i < samples; i++) {
      const r = await request();
      if (r.result.statusCode !== expectStatus) throw new Error(`${label}: status ${r.result.statusCode} ${r.result.body ?? ''}`);
      const current: FloorRow = {
        label, status: r.result.statusCode!, calls: together(r.operations, r.roundTrips), roundTrips: r.roundTrips,
        rcu: r.calls.reduce((sum, c) => sum + c.readCapacity, 0),
        consistent: r.calls.map((c) => (c.consistent ? 'strong' : 'eventual')).join(', '),
        p50Ms: 0,
      };
      if (first && (first.calls !== current.calls || first.rcu !== current.rcu || first.roundTrips !== current.roundTrips)) {
        throw new Error(`${label}: the cost changed between requests (${first.calls}, ${first.rcu} RCU → ${current.calls}, ${current.rcu} RCU)`);
      }
      first ??= current;
      latencies.push(r.latency);
    }
    return { ...first!, p50Ms: median(latencies) };
  };

  const list = (team: BenchTeam, query = '') => `/api/${team.slug}/projects${query}`;
  const finances = (team: BenchTeam) => `/api/${team.slug}/finances`;
  // Warm each path once so that the warm rows start warm.
  await send(warm, list(small), small.secret);
  await send(warm, list(crowd), crowd.secret);
  const etag = (await send(warm, list(small, '?page=3'), small.secret)).result.headers?.ETag as string;
  const financeTag = (await send(warm, finances(small), small.secret)).result.headers?.ETag as string;

  return [
    await row('list, 20 projects, first sight of the token', () => send(fresh(), list(small, '?page=2'), small.secret), 200),
    await row('list, 20 projects, warm (token recently seen valid)', () => send(warm, list(small, '?page=2'), small.secret), 200),
    await row('list, 50 projects, first sight', () => send(fresh(), list(small, '?per_page=50&page=2'), small.secret), 200),
    await row('list, 50 projects, warm', () => send(warm, list(small, '?per_page=50&page=2'), small.secret), 200),
    await row(`list, 20 projects of a team with ${(crowd.otherMembers + 1).toLocaleString('en')} members and ${crowd.costLines} cost lines, warm`, () => send(warm, list(crowd, '?page=2'), crowd.secret), 200),
    await row('finances, small summary', () => send(warm, finances(small), small.secret), 200),
    await row(`finances, ${crowd.costLines} cost lines`, () => send(warm, finances(crowd), crowd.secret), 200),
    await row('list revalidation, matching If-None-Match', () => send(warm, list(small, '?page=3'), small.secret, etag), 304),
    await row('finances revalidation, matching If-None-Match', () => send(warm, finances(small), small.secret, financeTag), 304),
    await row('list, unknown token', () => send(warm, list(small, '?page=2'), 'not-a-token'), 401),
    await row('list, page past the last', () => send(warm, list(small, '?page=9999'), small.secret), 200),
  ];
}

/** "BatchGetItem + Query" and whether they went together (one round trip) or one after the other. */
function together(operations: string[], roundTrips: number): string {
  const shape = operations.join(' + ');
  if (operations.length === 1) return shape;
  return roundTrips === 1 ? `${shape} (together)` : `${shape} (${roundTrips} round trips)`;
}
