import { Agent, createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { crc32 } from 'node:zlib';
import { CapacityLedger, type LimiterStats } from './capacity-ledger.ts';
import {
  LIMITED,
  planFor,
  tableName,
  tablesOf,
  type BatchGetAnswer,
  type BatchGetRequest,
  type Body,
  type KeysAndAttributes,
  type Plan,
  type TableInfo,
  type Unprocessed,
  type WriteRequest,
} from './limited-operations.ts';
import { throttled, transactionThrottled, type ThrottlingException } from './throttling-answers.ts';

export interface DynamoDbLimiterOptions {
  /** The DynamoDB-compatible endpoint to forward to (the suite's DynamoDB Local). */
  target: string;
  /** Per partition key value, a second: 1,000 WCU and 3,000 RCU, DynamoDB's partition limits. */
  writeUnitsPerPartitionKey?: number;
  readUnitsPerPartitionKey?: number;
  /** Per table, a second: 4,000 WCU and 12,000 RCU, a new on-demand table's initial (warm) throughput. */
  tableWriteUnits?: number;
  tableReadUnits?: number;
  /** Milliseconds on a clock that never goes back (default performance.now): a test may hold time still. */
  clock?: () => number;
  /**
   * The exception a throttled request gets. Default: by the table's capacity mode, as AWS documents
   * (throttling-answers.ts): ThrottlingException on an on-demand table (this project's), else
   * ProvisionedThroughputExceededException.
   */
  throttlingException?: ThrottlingException;
}

export interface DynamoDbLimiter {
  /** Give this to a client instead of the target. */
  endpoint: string;
  /** Units consumed and demands refused, per table and per partition key value. */
  stats(): LimiterStats;
  /** Forgets every count and refills every bucket. */
  reset(): void;
  stop(): Promise<void>;
}

/** DynamoDB's limits (docs/testing.md, "DynamoDB's limits, locally", names the pages). */
const DYNAMODB_LIMITS = {
  writeUnitsPerPartitionKey: 1_000,
  readUnitsPerPartitionKey: 3_000,
  tableWriteUnits: 4_000,
  tableReadUnits: 12_000,
} as const;

/** Requests that change what a table is: its description is asked again after one. */
const TABLE_CHANGES = new Set(['CreateTable', 'DeleteTable', 'UpdateTable']);
const AMZ_JSON = 'application/x-amz-json-1.0';

/** A request the limiter limits, read and planned. */
interface Planned {
  operation: string;
  parsed: Body;
  tables: Map<string, TableInfo>;
  plan: Plan;
}

/** An answer, the target's or the limiter's own, whole. */
interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * An HTTP proxy on 127.0.0.1 in front of a DynamoDB-compatible endpoint that applies DynamoDB's
 * throughput limits, which DynamoDB Local does not: per partition key value and per table, per
 * second, in capacity units as DynamoDB counts them (capacity-units.ts, limited-operations.ts), with
 * token buckets that refill continuously (capacity-ledger.ts). A request past a limit is not
 * executed: it is answered as DynamoDB answers (throttling-answers.ts); a BatchWriteItem or
 * BatchGetItem runs the items that fit and returns the others unprocessed. Control-plane requests,
 * and any request it cannot read, pass through unlimited.
 *
 * To cost what a request really read or wrote it asks DynamoDB Local for ConsumedCapacity
 * (ReturnConsumedCapacity=INDEXES) and removes it from the answer when the client did not ask. It
 * reads each table's key schema, ARN and capacity mode from DescribeTable, once, with the client's
 * own credentials (DynamoDB Local keeps a database per access key and region).
 */
export async function startDynamoDbLimiter(options: DynamoDbLimiterOptions): Promise<DynamoDbLimiter> {
  const target = new URL(options.target);
  const clock = options.clock ?? (() => performance.now());
  const limits = { ...DYNAMODB_LIMITS, ...options };
  const ledger = new CapacityLedger(
    {
      partitionWrite: limits.writeUnitsPerPartitionKey,
      partitionRead: limits.readUnitsPerPartitionKey,
      tableWrite: limits.tableWriteUnits,
      tableRead: limits.tableReadUnits,
    },
    clock,
  );
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const descriptions = new Map<string, Promise<TableInfo | undefined>>();
  let answered = 0;

  function send(headers: IncomingHttpHeaders, path: string, body: Buffer, method = 'POST'): Promise<Reply> {
    const forwarded: IncomingHttpHeaders = { ...headers, 'content-length': String(body.length) };
    // The answer may be rewritten, so it must come as plain JSON; the host is the target's.
    delete forwarded['accept-encoding'];
    delete forwarded.host;
    delete forwarded.connection;
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        { host: target.hostname, port: target.port, method, path, headers: forwarded, agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  /** The table as DescribeTable tells it, asked once per credentials and table (undefined: no such table). */
  function describe(headers: IncomingHttpHeaders, name: string): Promise<TableInfo | undefined> {
    // DynamoDB Local's database is the access key's and the region's, both in the credential scope.
    const scope = /Credential=([^/]+)\/[^/]+\/([^/]+)\//.exec(String(headers.authorization))?.slice(1).join('/');
    const key = `${scope}\u0000${name}`;
    let described = descriptions.get(key);
    if (!described) {
      const request = Buffer.from(JSON.stringify({ TableName: name }));
      const asked = { ...headers, 'x-amz-target': 'DynamoDB_20120810.DescribeTable', 'content-type': AMZ_JSON };
      described = send(asked, '/', request).then(({ status, body }) => {
        if (status !== 200) return undefined;
        const table = JSON.parse(body.toString()).Table;
        const keyOf = (type: string) =>
          (table.KeySchema as { AttributeName: string; KeyType: string }[]).find((k) => k.KeyType === type)
            ?.AttributeName;
        // A table with no BillingModeSummary is provisioned (API_BillingModeSummary.html).
        return {
          name,
          arn: table.TableArn,
          partitionKey: keyOf('HASH')!,
          sortKey: keyOf('RANGE'),
          onDemand: table.BillingModeSummary?.BillingMode === 'PAY_PER_REQUEST',
        };
      });
      descriptions.set(key, described);
      // A table not found now may be created later: only a description is kept.
      described.then(
        (info) => info || descriptions.delete(key),
        () => descriptions.delete(key),
      );
    }
    return described;
  }

  function forget(name: string): void {
    for (const key of descriptions.keys()) if (key.endsWith(`\u0000${name}`)) descriptions.delete(key);
  }

  /** Plans a request, or undefined when it is to pass through unlimited (not one it can read). */
  async function plan(operation: string, headers: IncomingHttpHeaders, body: Buffer): Promise<Planned | undefined> {
    if (!LIMITED.has(operation)) return undefined;
    let parsed: Body;
    try {
      parsed = JSON.parse(body.toString());
    } catch {
      return undefined;
    }
    const names = tablesOf(operation, parsed);
    const described = await Promise.all(names.map((name) => describe(headers, name).catch(() => undefined)));
    if (names.length === 0 || described.includes(undefined)) return undefined;
    const tables = new Map(described.map((info) => [info!.name, info!]));
    try {
      return { operation, parsed, tables, plan: planFor(operation, parsed, tables) };
    } catch {
      // A request DynamoDB will refuse as invalid: it is DynamoDB Local's to answer.
      return undefined;
    }
  }

  /** Runs a limited request: admits what fits, forwards that, settles its costs, answers. */
  async function limited(
    headers: IncomingHttpHeaders,
    path: string,
    { operation, parsed, tables, plan }: Planned,
  ): Promise<Reply> {
    const { kind, shape, demands } = plan;
    const refusals = ledger.admit(kind, demands, { atomic: shape === 'transaction' });
    const refused = refusals.map(Boolean);
    const tableOf = (i: number) => tables.get(demands[i]!.table)!;
    const first = refused.indexOf(true);
    if (first !== -1 && (shape !== 'batch' || refused.every(Boolean))) {
      ledger.throttledRequest(demands[first]!.table);
      const answer =
        shape === 'transaction'
          ? transactionThrottled(refused.map((r, i) => (r ? tableOf(i) : undefined)))
          : throttled(kind, refusals[first]!, tableOf(first), options.throttlingException);
      return json(answer.status, answer.body, { 'x-amzn-requestid': `limiter-${++answered}` });
    }
    const admitted = refused.map((r) => !r);
    const asked = parsed.ReturnConsumedCapacity;
    const wantsCapacity = asked === 'TOTAL' || asked === 'INDEXES';
    const request = { ...plan.forward(admitted), ReturnConsumedCapacity: wantsCapacity ? asked : 'INDEXES' };
    let upstream: Reply;
    try {
      upstream = await send(headers, path, Buffer.from(JSON.stringify(request)));
    } catch (error) {
      for (const [i, demand] of demands.entries()) if (admitted[i]) ledger.settle(kind, demand, 0);
      throw error;
    }
    const answer: Body | undefined = upstream.status === 200 ? JSON.parse(upstream.body.toString()) : undefined;
    if (!answer) {
      // DynamoDB charges a write whose condition failed, as DynamoDB Local does not say; any other
      // error (a request it refused as invalid) consumed nothing.
      const charged = /ConditionalCheckFailed|TransactionCanceled/.test(upstream.body.toString());
      for (const [i, demand] of demands.entries())
        if (admitted[i]) ledger.settle(kind, demand, charged ? demand.units : 0);
      return upstream;
    }
    const costs = plan.costs(answer, admitted);
    for (const [i, demand] of demands.entries()) if (admitted[i]) ledger.settle(kind, demand, costs[i]!);
    if (shape === 'batch') mergeUnprocessed(operation, answer, parsed, plan.unprocessed(refused));
    if (!wantsCapacity) delete answer.ConsumedCapacity;
    return json(200, answer, upstream.headers);
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const operation = String(req.headers['x-amz-target'] ?? '').replace(/^.*\./, '');
      try {
        const planned = await plan(operation, req.headers, body);
        if (TABLE_CHANGES.has(operation)) forget(tableNameIn(body));
        const path = req.url ?? '/';
        const reply = planned
          ? await limited(req.headers, path, planned)
          : await send(req.headers, path, body, req.method);
        res.writeHead(reply.status, passedHeaders(reply.headers, reply.body)).end(reply.body);
      } catch {
        // The target failed or went away: the client sees the connection fail, as it would.
        res.destroy();
      }
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    stats: () => ledger.stats(),
    reset: () => ledger.reset(),
    async stop() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      agent.destroy();
      await closed;
    },
  };
}

function tableNameIn(body: Buffer): string {
  try {
    return tableName(String(JSON.parse(body.toString()).TableName));
  } catch {
    return '';
  }
}

/**
 * An answer the limiter writes or rewrites, with the target's headers where it had them; its CRC32
 * is computed again (DynamoDB sends one, x-amz-crc32, that a client may check).
 */
function json(status: number, body: unknown, headers: IncomingHttpHeaders): Reply {
  const bytes = Buffer.from(JSON.stringify(body));
  return {
    status,
    headers: { ...headers, 'content-type': AMZ_JSON, 'x-amz-crc32': String(crc32(bytes)) },
    body: bytes,
  };
}

/** The target's headers for an answer passed on whole: hop-by-hop ones are the proxy's own. */
function passedHeaders(headers: IncomingHttpHeaders, body: Buffer): IncomingHttpHeaders {
  const kept = Object.fromEntries(
    Object.entries(headers).filter(
      ([name]) => !/^(content-length|transfer-encoding|connection|keep-alive)$/i.test(name),
    ),
  );
  return { ...kept, 'content-length': String(body.length) };
}

/** A batch's answer with the refused items added to what the target left unprocessed. */
function mergeUnprocessed(operation: string, answer: Body, request: Body, refused: Unprocessed) {
  const field = operation === 'BatchGetItem' ? 'UnprocessedKeys' : 'UnprocessedItems';
  // Of the same operation as `refused`: per table, a list of items where it has one, else keys.
  const merged = (answer[field] ?? {}) as Unprocessed;
  for (const [table, left] of Object.entries(refused)) {
    const before = merged[table];
    merged[table] = Array.isArray(left)
      ? [...((before ?? []) as WriteRequest[]), ...left]
      : { ...left, Keys: [...((before as KeysAndAttributes | undefined)?.Keys ?? []), ...left.Keys] };
  }
  answer[field] = merged;
  // A BatchGetItem answers every table it was asked about, with no items where none were read.
  if (field === 'UnprocessedKeys') {
    const read = answer as BatchGetAnswer;
    for (const table of Object.keys((request as BatchGetRequest).RequestItems!)) {
      read.Responses ??= {};
      read.Responses[table] ??= [];
    }
  }
}
