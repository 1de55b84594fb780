import { describe, expect, it } from 'vitest';
import { unauthenticated } from '../../../shared/http/errors.ts';
import { accessLog } from '../../../shared/http/middleware/access-log.ts';
import { jsonResponse } from '../../../shared/http/response.ts';
import type { Logger } from '../../../shared/log.ts';
import type { StoredToken, TeamHead } from '../../../shared/store/team-reader.ts';
import { apiContext, apiEvent, apiRequest, type ApiRequest, type FinanceContext } from '../../support/middy-request.ts';

const UNAUTHENTICATED = jsonResponse(401, '{"message":"Unauthenticated."}', { 'WWW-Authenticate': 'Bearer' });

/**
 * The access log middleware on its own: one `request` line per request, after the handler or on
 * error, with the API Gateway request id, the route, the team the request resolved to, the status
 * the client gets and the duration. Its logger is a stand-in recording what `info` receives.
 */
const SECRET = 'tra_access-log-secret';

function setUp() {
  const lines: { message: string; fields: Record<string, unknown> }[] = [];
  const log: Pick<Logger, 'info'> = {
    info: (message: unknown, ...extra: unknown[]) => void lines.push({ message: String(message), fields: extra[0] as Record<string, unknown> }),
  };
  return { lines, middleware: accessLog(log as Logger) };
}

const ACME: TeamHead = { teamId: 1, generation: 'g1', counts: { projects: 0, daemons: 0 } };
const TOKEN: StoredToken = { userId: 10, abilities: ['*'], expiresAt: null, revokedAt: null, inactive: false, memberships: new Set(['1#g1']) };

/** A request that resolved team 1 through its slug and was answered 200, started `elapsedMs` ago. */
function servedRequest(elapsedMs = 0): ApiRequest {
  const request = apiRequest({
    event: apiEvent({ route: 'daemons', team: 'acme', headers: { authorization: `Bearer ${SECRET}` } }),
    context: apiContext({ startedAt: performance.now() - elapsedMs }),
    response: jsonResponse(200, '{"data":[]}'),
  });
  request.context.access = { head: ACME, token: TOKEN, teamSegment: 'acme' };
  return request;
}

describe('access log, before the handler', () => {
  it('has no before step: nothing is written until the request is answered', () => {
    expect(setUp().middleware.before).toBeUndefined();
  });
});

describe('access log, after the handler', () => {
  it('writes one "request" line with the API request id, route, team id, status and duration', async () => {
    const { lines, middleware } = setUp();
    await middleware.after!(servedRequest());
    expect(lines).toEqual([{
      message: 'request',
      fields: { apiRequestId: 'api-request-1', route: 'GET /api/{team}/daemons', team: 1, status: 200, durationMs: expect.any(Number) },
    }]);
  });

  it('gives the duration since the request started in milliseconds, with at most 2 decimals', async () => {
    const { lines, middleware } = setUp();
    await middleware.after!(servedRequest(12.345_678));
    const durationMs = lines[0]!.fields.durationMs as number;
    expect(durationMs).toBeGreaterThanOrEqual(12.34);
    expect(Math.round(durationMs * 100) / 100).toBe(durationMs);
  });

  it('logs the status the client gets, as later steps left it (a 304)', async () => {
    const { lines, middleware } = setUp();
    const request = servedRequest();
    request.response = { statusCode: 304, headers: { ETag: '"x"' } };
    await middleware.after!(request);
    expect(lines[0]!.fields.status).toBe(304);
  });

  it('logs the resolved team id, never the raw path segment', async () => {
    const { lines, middleware } = setUp();
    const request = servedRequest();
    request.event = apiEvent({ team: 'raw-segment-text' });
    await middleware.after!(request);
    expect(lines[0]!.fields.team).toBe(1);
    expect(JSON.stringify(lines)).not.toContain('raw-segment-text');
  });

  it('never logs the Authorization header, the token or anything else from the headers', async () => {
    const { lines, middleware } = setUp();
    await middleware.after!(servedRequest());
    const text = JSON.stringify(lines);
    expect(text).not.toContain(SECRET);
    expect(text.toLowerCase()).not.toContain('bearer');
    expect(text).not.toContain('api.example.com');
  });
});

describe('access log, after a finances request', () => {
  it('logs the team of the finance item the request resolved to', async () => {
    const { lines, middleware } = setUp();
    const request = apiRequest<FinanceContext>({ event: apiEvent({ route: 'finances' }), response: jsonResponse(200, '{}') });
    request.context.access = { finance: { teamId: 7, generation: 'g1', fieldsJson: '' }, token: TOKEN, teamSegment: 'acme' };
    await middleware.after!(request);
    expect(lines[0]!.fields).toMatchObject({ route: 'GET /api/{team}/finances', team: 7, status: 200 });
  });
});

describe('access log, on error', () => {
  it('writes the line with the status of the error response the error handling set', async () => {
    const { lines, middleware } = setUp();
    const request = apiRequest({ event: apiEvent({ team: SECRET }), error: unauthenticated(), response: UNAUTHENTICATED });
    await middleware.onError!(request);
    expect(lines).toEqual([{
      message: 'request',
      fields: { apiRequestId: 'api-request-1', route: 'GET /api/{team}/projects', team: null, status: 401, durationMs: expect.any(Number) },
    }]);
  });

  it('logs team null, and not the segment, when no team was resolved (a token pasted into the path)', async () => {
    const { lines, middleware } = setUp();
    await middleware.onError!(apiRequest({ event: apiEvent({ team: SECRET }), error: unauthenticated(), response: UNAUTHENTICATED }));
    expect(lines[0]!.fields.team).toBeNull();
    expect(JSON.stringify(lines)).not.toContain(SECRET);
  });

  it('logs duration null when the error came before the request\'s clock was started', async () => {
    const { lines, middleware } = setUp();
    const request = apiRequest({ error: new Error('unexpected'), response: null });
    delete (request.context as Partial<ApiRequest['context']>).startedAt;
    await middleware.onError!(request);
    expect(lines[0]!.fields.durationMs).toBeNull();
  });

  it('logs status 500 when the error left no response', async () => {
    const { lines, middleware } = setUp();
    await middleware.onError!(apiRequest({ error: new Error('unexpected'), response: null }));
    expect(lines[0]!.fields.status).toBe(500);
  });

  it('writes the line when a direct invoke passed no API Gateway event at all', async () => {
    const { lines, middleware } = setUp();
    const request = apiRequest({ error: new Error('not an event'), response: jsonResponse(500, '{"message":"Server Error"}') });
    request.event = null as unknown as ApiRequest['event'];
    await middleware.onError!(request);
    expect(lines).toEqual([{ message: 'request', fields: { apiRequestId: undefined, route: undefined, team: null, status: 500, durationMs: expect.any(Number) } }]);
  });

  it('writes nothing about the error itself: no name, message or stack', async () => {
    const { lines, middleware } = setUp();
    await middleware.onError!(apiRequest({ error: new Error('internal detail'), response: null }));
    expect(JSON.stringify(lines)).not.toContain('internal detail');
  });
});
