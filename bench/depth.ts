import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { financesHandler, listHandler } from '../shared/http/handlers.ts';
import type { ListResource } from '../shared/domain/resources.ts';
import { runtime, type Runtime } from '../shared/runtime.ts';
import { createDocumentClient } from '../commands/store/document-client.ts';
import { resourcePartition } from '../shared/store/keys.ts';
import type { Deadline } from '../shared/deadline.ts';
import type { Ordinals } from '../shared/domain/pagination.ts';
import { samePage, TeamReader, type CallReport, type Prefetched, type TeamHead, type TeamState } from '../shared/store/team-reader.ts';
import { lambdaContext, routeRequest } from '../commands/local/api-gateway-event.ts';
import { callRecorder, type CallTrace } from './calls.ts';
import type { BenchTeam } from './data.ts';

/**
 * Part 1 of the benchmark: what one request costs at page 1, a middle page and the last page of
 * teams of growing size, through the real handlers (shared/http/handlers.ts, the code the
 * functions bundle), in this process, against DynamoDB Local. Every DynamoDB command is counted
 * at the client's middleware stack; read capacity and items come from ReturnConsumedCapacity.
 *
 * The baseline is the same handler with one thing changed: its reader's readPage Queries the
 * team's whole partition (following LastEvaluatedKey) and slices the page out in memory, the
 * common way to paginate when keys do not encode positions.
 */

export type Approach = 'this API' | 'whole team + slice';

export interface DepthCell {
  team: BenchTeam;
  request: string;
  approach: Approach;
  latencies: number[];
  calls: CallTrace;
  readCapacity: number;
  items: number;
}

export interface DepthOptions {
  tableName: string;
  endpoint: string;
  teams: BenchTeam[];
  perPage: number;
  /** Requests per cell for this API's handler. */
  samples: number;
  /** Requests per cell for the baseline, by team size (it reads the whole team every time). */
  baselineSamples: (team: BenchTeam) => number;
  log?: (line: string) => void;
}

interface Meter {
  readCapacity: number;
  items: number;
}

/** The common approach's reader: the whole partition, every time, then a slice. */
class WholeTeamReader {
  private readonly access: TeamReader;
  private readonly doc: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly observe: (call: CallReport) => void;

  constructor(doc: DynamoDBDocumentClient, tableName: string, observe: (call: CallReport) => void) {
    this.access = new TeamReader(doc, { tableName, observe });
    this.doc = doc;
    this.tableName = tableName;
    this.observe = observe;
  }

  readAccess(...args: Parameters<TeamReader['readAccess']>) {
    return this.access.readAccess(...args);
  }

  /** A warm request's speculative read, done the same way: the whole partition, then the slice. */
  prefetchPage(team: TeamState, resource: ListResource, ordinals: Ordinals, deadline?: Deadline): Promise<Prefetched> {
    return this.wholePage(team, resource, ordinals, deadline?.signal()).then(
      (items) => ({ team, resource, ordinals, result: { items } }),
      (error: unknown) => ({ team, resource, ordinals, result: { error } }),
    );
  }

  async readPage(head: TeamHead, resource: ListResource, ordinals: Ordinals, options: { deadline?: Deadline; prefetched?: Prefetched } = {}): Promise<string[]> {
    const p = options.prefetched;
    if (p && samePage(p, head, resource, ordinals)) {
      if ('error' in p.result) throw p.result.error;
      return p.result.items;
    }
    return this.wholePage(head, resource, ordinals, options.deadline?.signal());
  }

  private async wholePage(head: TeamState, resource: ListResource, { first, last }: Ordinals, signal?: AbortSignal): Promise<string[]> {
    const all: string[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const result = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': resourcePartition(head.teamId, head.generation, resource) },
          ProjectionExpression: 'j',
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
          ReturnConsumedCapacity: 'TOTAL',
        }),
        { abortSignal: signal },
      );
      for (const item of result.Items ?? []) all.push(item.j as string);
      this.observe({ operation: 'Query', readCapacity: result.ConsumedCapacity?.CapacityUnits ?? 0, items: result.Items?.length ?? 0, consistent: true });
      startKey = result.LastEvaluatedKey;
    } while (startKey);
    return all.slice(first - 1, last);
  }
}

type Handler = (event: unknown, context: unknown) => Promise<APIGatewayProxyStructuredResultV2>;

export async function measureDepth(options: DepthOptions): Promise<DepthCell[]> {
  const { tableName, perPage } = options;
  // The functions' own runtime (shared/runtime.ts), built as each function builds it, with its
  // logger silenced: this part measures DynamoDB work; part 4 measures the deployed handlers whole.
  const saved = { ...process.env };
  Object.assign(process.env, { TABLE_NAME: tableName, DYNAMODB_ENDPOINT: options.endpoint, LOG_LEVEL: 'SILENT', POWERTOOLS_LOG_LEVEL: 'SILENT' });
  let handlers: Record<'projects' | 'finances' | 'baseline', Handler>;
  const meter: Meter = { readCapacity: 0, items: 0 };
  const observe = (call: CallReport) => {
    meter.readCapacity += call.readCapacity;
    meter.items += call.items;
  };
  let ours: ReturnType<typeof callRecorder>;
  let theirs: ReturnType<typeof callRecorder>;
  try {
    const base = runtime();
    // The production client, as runtime() configured it (timeouts, retries), observed.
    const client = (base.reader as unknown as { client: DynamoDBClient }).client;
    ours = callRecorder(client);
    const observed: Runtime = { config: base.config, reader: new TeamReader(client, { tableName, observe }) };
    // The baseline gets generous timeouts: a 1 MB page must not fail it, only cost it.
    const baselineDoc = createDocumentClient({ endpoint: options.endpoint, maxAttempts: 3, requestTimeoutMs: 60_000 });
    theirs = callRecorder(baselineDoc);
    const wholeTeam = new WholeTeamReader(baselineDoc, tableName, observe) as unknown as TeamReader;
    handlers = {
      projects: listHandler('projects', observed) as unknown as Handler,
      finances: financesHandler(observed) as unknown as Handler,
      baseline: listHandler('projects', { config: base.config, reader: wholeTeam }) as unknown as Handler,
    };
  } finally {
    for (const key of ['TABLE_NAME', 'DYNAMODB_ENDPOINT', 'LOG_LEVEL', 'POWERTOOLS_LOG_LEVEL']) {
      if (saved[key] === undefined) delete process.env[key];
      else process.env[key] = saved[key];
    }
  }

  let requestId = 0;
  const run = async (handler: Handler, recorder: typeof ours, team: BenchTeam, target: string) => {
    const event = routeRequest({
      method: 'GET', target, sourceIp: '127.0.0.1',
      rawHeaders: ['Host', 'api.example.com', 'Authorization', `Bearer ${team.secret}`, 'Accept', 'application/json'],
    });
    if (!event.route) throw new Error(`no route for ${target}`);
    // A long budget: the baseline must never be cut short by the request deadline.
    const context = lambdaContext('bench', 120_000, `bench-${++requestId}`);
    meter.readCapacity = 0;
    meter.items = 0;
    const started = performance.now();
    const { result, calls } = await recorder.trace(() => handler(event.event, context));
    const latency = performance.now() - started;
    if (result.statusCode !== 200) throw new Error(`${target}: status ${result.statusCode} ${result.body}`);
    return { latency, calls, readCapacity: meter.readCapacity, items: meter.items, body: result.body as string };
  };

  const cells: DepthCell[] = [];
  for (const team of options.teams) {
    const lastPage = Math.ceil(team.size / perPage);
    const pages: [string, number][] = [['page 1', 1], [`middle (page ${Math.ceil(lastPage / 2)})`, Math.ceil(lastPage / 2)], [`last (page ${lastPage})`, lastPage]];
    const base = `/api/${team.slug}`;
    const baselineSamples = options.baselineSamples(team);
    // Warm up both paths on this team (the JVM behind DynamoDB Local compiles as it goes).
    for (let i = 0; i < 30; i++) await run(handlers.projects, ours, team, `${base}/projects?per_page=${perPage}&page=${1 + (i % lastPage)}`);
    await run(handlers.baseline, theirs, team, `${base}/projects?per_page=${perPage}&page=1`);

    for (const [request, page] of pages) {
      const target = `${base}/projects?per_page=${perPage}&page=${page}`;
      const mine: DepthCell = { team, request, approach: 'this API', latencies: [], calls: undefined!, readCapacity: 0, items: 0 };
      const whole: DepthCell = { team, request, approach: 'whole team + slice', latencies: [], calls: undefined!, readCapacity: 0, items: 0 };
      let ourBody = '';
      let theirBody = '';
      // Interleaved: a baseline request every samples/baselineSamples requests of ours.
      for (let i = 0; i < options.samples; i++) {
        const r = await run(handlers.projects, ours, team, target);
        record(mine, r);
        ourBody = r.body;
        if (Math.floor((i * baselineSamples) / options.samples) !== Math.floor(((i + 1) * baselineSamples) / options.samples)) {
          const b = await run(handlers.baseline, theirs, team, target);
          record(whole, b);
          theirBody = b.body;
        }
      }
      // Both approaches must answer the same page.
      if (dataOf(ourBody) !== dataOf(theirBody)) throw new Error(`${team.slug} ${request}: the baseline answered different data`);
      cells.push(mine, whole);
      options.log?.(`  ${team.size.toLocaleString('en')} projects, ${request}: ${summary(mine)} | baseline ${summary(whole)}`);
    }
    const finances: DepthCell = { team, request: 'finances', approach: 'this API', latencies: [], calls: undefined!, readCapacity: 0, items: 0 };
    for (let i = 0; i < options.samples; i++) record(finances, await run(handlers.finances, ours, team, `${base}/finances`));
    cells.push(finances);
    options.log?.(`  ${team.size.toLocaleString('en')} projects, finances: ${summary(finances)}`);
  }
  return cells;
}

function record(cell: DepthCell, r: { latency: number; calls: CallTrace; readCapacity: number; items: number }) {
  if (cell.calls && (cell.calls.operations.join() !== r.calls.operations.join() || cell.readCapacity !== r.readCapacity || cell.items !== r.items)) {
    throw new Error(`${cell.team.slug} ${cell.request} (${cell.approach}): the cost changed between requests`);
  }
  cell.latencies.push(r.latency);
  cell.calls = r.calls;
  cell.readCapacity = r.readCapacity;
  cell.items = r.items;
}

const dataOf = (body: string) => JSON.stringify((JSON.parse(body) as { data: unknown }).data);

function summary(cell: DepthCell): string {
  const sorted = [...cell.latencies].sort((a, b) => a - b);
  const n = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;
  return `${n(cell.calls.operations.length, 'call')}, ${n(cell.calls.sequentialRoundTrips, 'round trip')}, ${cell.readCapacity} RCU, ${n(cell.items, 'item')}, p50 ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2)} ms (n=${cell.latencies.length})`;
}
