import { describe, expect, it } from 'vitest';
import { unauthenticated } from '../../../shared/api/http/errors.ts';
import { accessLog, ACCESS_LINE_METRICS } from '../../../shared/api/http/middleware/access-log.ts';
import { METRICS_NAMESPACE, STACK_DIMENSION } from '../../../shared/metrics.ts';
import { jsonResponse } from '../../../shared/api/http/envelope.ts';
import type { Logger } from '../../../shared/api/log.ts';
import { DOCUMENT_ROUTE, ROUTES } from '../../../shared/api/routes.ts';
import { emfProblems } from '../../support/emf.ts';
import { apiContext, apiEvent, apiRequest, type ApiRequest } from '../../support/middy-request.ts';
import { monotonicMs } from '../../../shared/api/clock.ts';

/**
 * The access line on its own: one `request` line per request, after the handler or on error, that
 * is an embedded metric format document (test/support/emf.ts), with the route and outcome as its
 * dimensions and the request's metrics, the API request id, the team the request resolved to and
 * the status. Its logger is a stand-in recording what `info` receives; the line as shared/api/log.ts
 * writes it to stdout is tested in test/integration/logs.test.ts.
 */
const SECRET = 'tra_access-log-secret';
/** The stack's name, as the stack gives it to its functions (STACK_NAME). */
const STACK = 'TeamResourcesProduction';
const DAEMONS = ROUTES.find((route) => route.name === 'daemons')!;

/** `stack` null: a function run outside a stack. */
function setUp(route: typeof DAEMONS | typeof DOCUMENT_ROUTE = DAEMONS, stack: string | null = STACK) {
  const lines: Record<string, any>[] = [];
  const log = { info: (message: string, fields: object) => void lines.push({ message, ...fields }) };
  /** The request, with the stand-in as its own logger (as lambdaContext gives each request one). */
  const logged = <R extends { context: { log: Logger } }>(request: R): R => {
    request.context.log = log as unknown as Logger;
    return request;
  };
  return { lines, logged, middleware: accessLog(route, stack ?? undefined) };
}

/** A request that resolved team 1 through its slug and was answered `status`, started `elapsedMs` ago. */
function servedRequest(status = 200, elapsedMs = 0): ApiRequest {
  const request = apiRequest({
    event: apiEvent({ route: 'daemons', team: 'acme', headers: { authorization: `Bearer ${SECRET}` } }),
    context: apiContext({ startedAt: monotonicMs() - elapsedMs }),
    response: status === 304 ? { statusCode: 304, headers: { ETag: '"x"' } } : jsonResponse(status, '{}'),
  });
  request.context.teamId = 1;
  request.context.usage.roundTrips = 2;
  request.context.usage.readCapacity = 1.5;
  return request;
}

describe('the access line', () => {
  it('is written after the handler, never before it', async () => {
    const { lines, logged, middleware } = setUp();
    expect(middleware.before).toBeUndefined();
    await middleware.after!(logged(servedRequest()));
    expect(lines).toHaveLength(1);
  });

  it("is an embedded metric format document: the stack, route and outcome as dimensions, the request's metrics as numbers", async () => {
    const { lines, logged, middleware } = setUp();
    await middleware.after!(logged(servedRequest(200, 12.345_678)));
    const [line] = lines;
    expect(emfProblems(JSON.stringify(line))).toEqual([]);
    expect(line).toMatchObject({
      message: 'request',
      Stack: STACK,
      route: 'daemons',
      outcome: '2xx',
      status: 200,
      apiRequestId: 'api-request-1',
      team: 1,
      Requests: 1,
      ColdStart: 1,
      DynamoDBRoundTrips: 2,
      DynamoDBReadCapacity: 1.5,
    });
    expect(line!.Latency).toBeGreaterThanOrEqual(12.34);
    expect(Math.round(line!.Latency * 100) / 100).toBe(line!.Latency);
    expect(line!._aws.CloudWatchMetrics).toEqual(
      ACCESS_LINE_METRICS.map(({ dimensions, metrics }) => ({
        Namespace: METRICS_NAMESPACE,
        Dimensions: [dimensions],
        Metrics: metrics,
      })),
    );
  });

  it("publishes every metric with the stack's name as a dimension, so two stacks in one account share none", async () => {
    for (const route of [DAEMONS, DOCUMENT_ROUTE]) {
      const { lines, logged, middleware } = setUp(route);
      await middleware.after!(logged(servedRequest()));
      const directives = lines[0]!._aws.CloudWatchMetrics as { Dimensions: string[][]; Metrics: unknown[] }[];
      expect(directives.flatMap((d) => d.Metrics).length).toBeGreaterThan(0);
      for (const { Dimensions } of directives) for (const set of Dimensions) expect(set).toContain(STACK_DIMENSION);
      expect(lines[0]![STACK_DIMENSION]).toBe(STACK);
    }
    expect(ACCESS_LINE_METRICS.every(({ dimensions }) => dimensions[0] === STACK_DIMENSION)).toBe(true);
  });

  it('leaves the Stack dimension out outside a stack (the local server), and stays a valid document', async () => {
    const { lines, logged, middleware } = setUp(DAEMONS, null);
    await middleware.after!(logged(servedRequest()));
    expect(emfProblems(JSON.stringify(lines[0]))).toEqual([]);
    expect(lines[0]!._aws.CloudWatchMetrics.map((d: { Dimensions: string[][] }) => d.Dimensions)).toEqual([
      [['route', 'outcome']],
      [['route']],
    ]);
    expect(lines[0]).not.toHaveProperty(STACK_DIMENSION);
  });

  it("counts the request's own cold start, as its logger's lines say it (cold_start)", async () => {
    const { lines, logged, middleware } = setUp();
    for (const coldStart of [true, false]) {
      const request = servedRequest();
      request.context.coldStart = coldStart;
      await middleware.after!(logged(request));
    }
    expect(lines.map((line) => line.ColdStart)).toEqual([1, 0]);
  });

  it("leaves DynamoDB out of the OpenAPI document's line, which reads no table", async () => {
    const { lines, logged, middleware } = setUp(DOCUMENT_ROUTE);
    await middleware.after!(logged(servedRequest()));
    expect(emfProblems(JSON.stringify(lines[0]))).toEqual([]);
    expect(lines[0]).not.toHaveProperty('DynamoDBRoundTrips');
    expect(JSON.stringify(lines[0]!._aws)).not.toContain('DynamoDB');
  });

  it.each([
    [200, '2xx'],
    [304, '304'],
    [401, '401'],
    [403, '403'],
    [404, '404'],
    [422, '422'],
    [500, '5xx'],
    [503, '5xx'],
  ])('gives status %i the outcome %s', async (status, outcome) => {
    const { lines, logged, middleware } = setUp();
    await middleware.after!(logged(servedRequest(status)));
    expect(lines[0]).toMatchObject({ status, outcome });
  });

  it('logs the team of the finance item a finances request resolved to', async () => {
    const { lines, logged, middleware } = setUp(ROUTES.find((route) => route.name === 'finances')!);
    const request = apiRequest({ event: apiEvent({ route: 'finances' }), response: jsonResponse(200, '{}') });
    request.context.teamId = 7;
    await middleware.after!(logged(request));
    expect(lines[0]).toMatchObject({ route: 'finances', team: 7, status: 200 });
  });
});

describe('the access line on error', () => {
  it('carries the status of the error response, team null and none of the raw segment (a token pasted into the path)', async () => {
    const { lines, logged, middleware } = setUp();
    await middleware.onError!(
      logged(
        apiRequest({ event: apiEvent({ team: SECRET }), error: unauthenticated(), response: jsonResponse(401, '{}') }),
      ),
    );
    expect(lines[0]).toMatchObject({ outcome: '401', status: 401, team: null });
    expect(JSON.stringify(lines)).not.toContain(SECRET);
  });

  it('says 500 when the error left no response, and nothing about the error itself', async () => {
    const { lines, logged, middleware } = setUp();
    await middleware.onError!(logged(apiRequest({ error: new Error('internal detail'), response: null })));
    expect(lines[0]).toMatchObject({ outcome: '5xx', status: 500 });
    expect(JSON.stringify(lines)).not.toContain('internal detail');
  });

  it('is still a valid document when a direct invoke passed no API Gateway event at all', async () => {
    const { lines, logged, middleware } = setUp();
    const request = apiRequest({ error: new Error('not an event'), response: jsonResponse(500, '{}') });
    request.event = null as unknown as ApiRequest['event'];
    delete (request.context as Partial<ApiRequest['context']>).startedAt;
    await middleware.onError!(logged(request));
    expect(emfProblems(JSON.stringify(lines[0]))).toEqual([]);
  });

  it('never carries the Authorization header, the token or the host', async () => {
    const { lines, logged, middleware } = setUp();
    await middleware.after!(logged(servedRequest()));
    const text = JSON.stringify(lines).toLowerCase();
    for (const secret of [SECRET.toLowerCase(), 'bearer', 'api.example.com']) expect(text).not.toContain(secret);
  });
});
