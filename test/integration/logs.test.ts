import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lambdaContext, routeRequest } from '../../commands/local/api-gateway-event.ts';
import { readApiConfig } from '../../shared/api/config.ts';
import { listHandler } from '../../shared/api/http/handlers.ts';
import { createLogger } from '../../shared/api/log.ts';
import { TeamReader } from '../../shared/api/team-reader.ts';
import { emfProblems } from '../support/emf.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { projects, snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * The access line as the functions write it to stdout (shared/api/log.ts; the stream Lambda
 * forwards to CloudWatch Logs as it is): one JSON object per request, which is also an embedded
 * metric format document CloudWatch extracts the metrics from (test/support/emf.ts).
 */
let api: TestApi;
let table: TestTable;
const lines: string[] = [];
const write = process.stdout.write.bind(process.stdout);

beforeAll(async () => {
  table = await freshTable();
  await importDocument(
    table,
    snapshot({
      teams: [team(1, 'acme')],
      users: [user(10, [1])],
      tokens: [token(10, 'log-secret-token')],
      projects: projects(1, 3),
    }),
  );
  api = await startApi(table, { LOG_LEVEL: 'INFO' });
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    const text = String(chunk);
    // Capture log lines; let vitest's own output through.
    if (text.startsWith('{')) lines.push(text);
    else return write(chunk, ...rest);
    return true;
  }) as typeof process.stdout.write;
});
afterAll(async () => {
  process.stdout.write = write;
  await api.close();
});

const writtenLines = () => lines.flatMap((line) => line.split('\n')).filter(Boolean);
const requestLines = () =>
  writtenLines()
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((l) => l.message === 'request');

describe('request logs', () => {
  it('writes exactly one line per request, with request id, route, outcome, team, status, latency and cold start', async () => {
    const statuses = [
      (await api.get('/api/acme/projects', { token: 'log-secret-token' })).status,
      (await api.get('/api/acme/projects?per_page=0', { token: 'log-secret-token' })).status,
      (await api.get('/api/acme/projects', { token: 'wrong' })).status,
      (await api.get('/api/nope/finances', { token: 'log-secret-token' })).status,
    ];
    expect(statuses).toEqual([200, 422, 401, 404]);
    const logged = requestLines();
    expect(logged.map((l) => l.status)).toEqual(statuses);
    expect(logged.map((l) => l.route)).toEqual(['projects', 'projects', 'projects', 'finances']);
    expect(logged.map((l) => l.outcome)).toEqual(['2xx', '422', '401', '404']);
    // The resolved team id, or null: never the raw path segment.
    expect(logged.map((l) => l.team ?? null)).toEqual([1, 1, null, null]);
    for (const line of logged) {
      expect(line).toMatchObject({ level: 'INFO', service: 'team-resources-api' });
      expect(line.function_request_id).toEqual(expect.any(String));
      expect(line.apiRequestId).toEqual(expect.any(String));
      expect(line.Latency).toEqual(expect.any(Number));
      expect(line.cold_start).toEqual(expect.any(Boolean));
    }
    // Each function's first request is its cold start.
    expect(logged.map((l) => l.cold_start)).toEqual([true, false, false, true]);
    expect(logged.map((l) => l.ColdStart)).toEqual([1, 0, 0, 1]);
  });

  it("writes each line as one embedded metric format document, its metrics the request's own", async () => {
    const before = requestLines().length;
    await api.get('/api/acme/projects', { token: 'log-secret-token' });
    await api.get('/api/acme/projects', { token: 'log-secret-token', method: 'HEAD' });
    const written = writtenLines().filter((line) => line.includes('"message":"request"'));
    expect(written.length).toBeGreaterThan(before);
    for (const line of written) expect(emfProblems(line), line).toEqual([]);
    const [first, again] = requestLines().slice(before);
    // A warm token: the page's Query goes with the token's read (one round trip), 1.5 RCU in all.
    expect(first).toMatchObject({
      route: 'projects',
      outcome: '2xx',
      Requests: 1,
      DynamoDBRoundTrips: 1,
      DynamoDBReadCapacity: 1.5,
    });
    expect(again).toMatchObject({ route: 'projects', outcome: '2xx', DynamoDBRoundTrips: 1 });
    expect((first!._aws as { CloudWatchMetrics: unknown[] }).CloudWatchMetrics).toEqual([
      {
        Namespace: 'TeamResourcesApi',
        Dimensions: [['route', 'outcome']],
        Metrics: [{ Name: 'Requests', Unit: 'Count' }],
      },
      {
        Namespace: 'TeamResourcesApi',
        Dimensions: [['route']],
        Metrics: [
          { Name: 'Latency', Unit: 'Milliseconds' },
          { Name: 'ColdStart', Unit: 'Count' },
          { Name: 'DynamoDBRoundTrips', Unit: 'Count' },
          { Name: 'DynamoDBReadCapacity', Unit: 'Count' },
        ],
      },
    ]);
  });

  it('logs no path segment that named no team: a token pasted into the path stays out', async () => {
    const before = lines.length;
    await api.get('/api/tra_pasted-by-mistake/projects', { token: 'log-secret-token' });
    expect(lines.slice(before).join('')).not.toContain('tra_pasted-by-mistake');
  });

  it('never logs a token or an Authorization header', () => {
    const all = lines.join('');
    expect(all).not.toContain('log-secret-token');
    expect(all).not.toContain('wrong');
    expect(all.toLowerCase()).not.toContain('authorization');
    expect(all.toLowerCase()).not.toContain('bearer');
  });

  it('takes its level from LOG_LEVEL', () => {
    const saved = process.env.LOG_LEVEL;
    const before = lines.length;
    process.env.LOG_LEVEL = 'ERROR';
    createLogger().info('info when the level is ERROR');
    process.env.LOG_LEVEL = 'DEBUG';
    createLogger().debug('debug when the level is DEBUG');
    process.env.LOG_LEVEL = saved;
    const written = lines.slice(before).join('');
    expect(written).not.toContain('info when the level is ERROR');
    expect(written).toContain('debug when the level is DEBUG');
  });
});

describe('requests served side by side by one function', () => {
  it('gives each access line its own request id, and the cold start to the first request alone', async () => {
    // A new function, as a cold container has it; the local server runs requests through one like this.
    const { tableName } = table;
    const reader = new TeamReader(table.client, { tableName });
    const handler = listHandler('projects', { config: readApiConfig({ TABLE_NAME: tableName }), reader }) as (
      event: unknown,
      context: unknown,
    ) => Promise<{ statusCode: number }>;
    const rawHeaders = ['Host', 'api.example.com', 'Authorization', 'Bearer log-secret-token'];
    const eventOf = (target: string, requestId: string) => {
      const routed = routeRequest({ method: 'GET', target, rawHeaders, sourceIp: '127.0.0.1', requestId });
      if (!routed.route) throw new Error(`no route for ${target}`);
      return routed.event;
    };
    const before = requestLines().length;
    // Every other request is a 422, which ends sooner: the lines come out in another order than the requests went in.
    const requests = Array.from({ length: 8 }, (_, i) => {
      const target = i % 2 === 0 ? '/api/acme/projects' : '/api/acme/projects?per_page=0';
      return handler(eventOf(target, `api-${i}`), lambdaContext('projects', 10_000, `lambda-${i}`));
    });
    expect((await Promise.all(requests)).map((response) => response.statusCode)).toEqual([
      200, 422, 200, 422, 200, 422, 200, 422,
    ]);
    const logged = requestLines().slice(before);
    expect(logged).toHaveLength(8);
    for (const line of logged) {
      expect(line.function_request_id).toBe(String(line.apiRequestId).replace('api-', 'lambda-'));
      expect(line.ColdStart).toBe(line.cold_start ? 1 : 0);
    }
    const cold = logged.filter((line) => line.cold_start).map((line) => line.function_request_id);
    expect(cold).toEqual(['lambda-0']);
  });
});
