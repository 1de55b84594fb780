import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { routeRequest, type IncomingRequest } from '../../commands/local/api-gateway-event.ts';

function request(target: string, rawHeaders: string[] = ['Host', '127.0.0.1:3000'], method = 'GET'): IncomingRequest {
  return { method, target, rawHeaders, sourceIp: '127.0.0.1' };
}

/** The event of a request that must be routed, or a failed test naming the target. */
function eventOf(req: IncomingRequest, now?: Date): APIGatewayProxyEventV2 {
  const routed = routeRequest(req, now);
  if (routed.route === undefined) throw new Error(`expected ${req.method} ${req.target} to be routed`);
  return routed.event;
}

describe('routeRequest: routing', () => {
  it.each([
    ['/api/acme/finances', 'finances'],
    ['/api/acme/daemons', 'daemons'],
    ['/api/acme/projects', 'projects'],
  ])('routes GET %s to %s', (target, name) => {
    const routed = routeRequest(request(target));
    expect(routed.route?.name).toBe(name);
  });

  it('names the route in routeKey', () => {
    expect(eventOf(request('/api/acme/projects')).routeKey).toBe('GET /api/{team}/projects');
  });

  it('passes the team segment as pathParameters.team', () => {
    expect(eventOf(request('/api/acme/projects')).pathParameters).toEqual({ team: 'acme' });
  });

  it('passes a numeric team segment as written, leading zeros kept', () => {
    expect(eventOf(request('/api/01/projects')).pathParameters).toEqual({ team: '01' });
  });

  it.each(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'get', 'TRACE', 'CONNECT'])(
    'routes no %s on a route path',
    (method) => {
      expect(routeRequest(request('/api/acme/projects', [], method)).route).toBeUndefined();
    },
  );

  it.each([
    ['/api/acme/finances', 'finances'],
    ['/api/acme/daemons', 'daemons'],
    ['/api/acme/projects', 'projects'],
    ['/api/openapi.json', 'openapi'],
  ])('routes HEAD %s to %s, as the stack deploys a HEAD route beside each GET', (target, name) => {
    const event = eventOf(request(target, ['Host', '127.0.0.1:3000'], 'HEAD'));
    expect(routeRequest(request(target, [], 'HEAD')).route?.name).toBe(name);
    expect(event.requestContext.http.method).toBe('HEAD');
    expect(event.routeKey).toMatch(/^HEAD \/api\//);
    expect(event.requestContext.routeKey).toBe(event.routeKey);
  });

  it.each([
    '/',
    '/api',
    '/api/acme',
    '/api/acme/projects/',
    '/api/acme/projects/1',
    '/api//projects',
    '/API/acme/projects',
    '/api/acme/Projects',
    '/api/acme/users',
    '/prefix/api/acme/projects',
    '/api/a/b/projects',
  ])('routes no GET %s', (target) => {
    expect(routeRequest(request(target)).route).toBeUndefined();
  });

  it('routes no path with a malformed percent escape', () => {
    expect(routeRequest(request('/api/%E0%A4%A/projects')).route).toBeUndefined();
  });

  it('routes a path whose segments are percent-encoded, as API Gateway decodes it', () => {
    expect(routeRequest(request('/api/acme/%70rojects')).route?.name).toBe('projects');
  });

  it('routes by path alone, whatever the query', () => {
    expect(routeRequest(request('/api/acme/daemons?page=2&per_page=abc')).route?.name).toBe('daemons');
  });
});

describe('routeRequest: the event', () => {
  it('is a payload 2.0 event, not base64-encoded', () => {
    const event = eventOf(request('/api/acme/projects'));
    expect(event.version).toBe('2.0');
    expect(event.isBase64Encoded).toBe(false);
  });

  it('percent-decodes the team in pathParameters', () => {
    expect(eventOf(request('/api/caf%C3%A9/projects')).pathParameters).toEqual({ team: 'café' });
  });

  it('percent-decodes rawPath and requestContext.http.path', () => {
    const event = eventOf(request('/api/caf%C3%A9%20bar/projects?page=2'));
    expect(event.rawPath).toBe('/api/café bar/projects');
    expect(event.requestContext.http.path).toBe('/api/café bar/projects');
  });

  it('keeps rawQueryString as sent', () => {
    expect(eventOf(request('/api/acme/projects?per_page=5&page=%32')).rawQueryString).toBe('per_page=5&page=%32');
  });

  it('has an empty rawQueryString without a query', () => {
    expect(eventOf(request('/api/acme/projects')).rawQueryString).toBe('');
  });

  it('decodes the query into queryStringParameters', () => {
    expect(eventOf(request('/api/acme/projects?per_page=5&page=%32&q=a%20b')).queryStringParameters).toEqual({
      per_page: '5',
      page: '2',
      q: 'a b',
    });
  });

  it('joins a repeated query parameter with commas', () => {
    expect(eventOf(request('/api/acme/projects?page=1&page=2&page=3')).queryStringParameters).toEqual({
      page: '1,2,3',
    });
  });

  it('passes a parameter without a value as empty', () => {
    expect(eventOf(request('/api/acme/projects?page')).queryStringParameters).toEqual({ page: '' });
  });

  it('omits queryStringParameters when there is no query', () => {
    expect(eventOf(request('/api/acme/projects'))).not.toHaveProperty('queryStringParameters');
  });

  it('omits queryStringParameters when the query is empty', () => {
    expect(eventOf(request('/api/acme/projects?'))).not.toHaveProperty('queryStringParameters');
  });

  it('lower-cases header names', () => {
    const event = eventOf(
      request('/api/acme/projects', ['Host', 'h', 'Accept', 'application/json', 'X-Custom-Thing', 'v']),
    );
    expect(event.headers).toMatchObject({ host: 'h', accept: 'application/json', 'x-custom-thing': 'v' });
    expect(event.headers).not.toHaveProperty('Accept');
  });

  it('joins a repeated header with commas', () => {
    const event = eventOf(request('/api/acme/projects', ['Accept', 'text/html', 'accept', 'application/json']));
    expect(event.headers.accept).toBe('text/html,application/json');
  });

  it('joins repeated Authorization headers with commas too', () => {
    const event = eventOf(request('/api/acme/projects', ['Authorization', 'Bearer a', 'authorization', 'Bearer b']));
    expect(event.headers.authorization).toBe('Bearer a,Bearer b');
  });

  it('adds x-forwarded-proto http, as the local server speaks plain HTTP', () => {
    expect(eventOf(request('/api/acme/projects')).headers['x-forwarded-proto']).toBe('http');
  });

  it('keeps an x-forwarded-proto the request gave', () => {
    const event = eventOf(request('/api/acme/projects', ['X-Forwarded-Proto', 'https']));
    expect(event.headers['x-forwarded-proto']).toBe('https');
  });

  it('moves cookies out of the headers into cookies, as API Gateway does', () => {
    const event = eventOf(request('/api/acme/projects', ['Cookie', 'a=1; b=2']));
    expect(event.cookies).toEqual(['a=1', 'b=2']);
    expect(event.headers).not.toHaveProperty('cookie');
  });

  it('fills requestContext', () => {
    const now = new Date('2026-06-01T12:00:00.000Z');
    const event = eventOf(
      {
        method: 'GET',
        target: '/api/acme/projects',
        rawHeaders: ['Host', 'localhost:3000', 'User-Agent', 'curl/8'],
        sourceIp: '10.0.0.9',
      },
      now,
    );
    expect(event.requestContext).toMatchObject({
      domainName: 'localhost:3000',
      http: {
        method: 'GET',
        path: '/api/acme/projects',
        protocol: 'HTTP/1.1',
        sourceIp: '10.0.0.9',
        userAgent: 'curl/8',
      },
      routeKey: 'GET /api/{team}/projects',
      stage: '$default',
      timeEpoch: now.getTime(),
    });
    expect(event.requestContext.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('gives each request its own requestId', () => {
    const a = eventOf(request('/api/acme/projects'));
    const b = eventOf(request('/api/acme/projects'));
    expect(a.requestContext.requestId).not.toBe(b.requestContext.requestId);
  });
});

describe('routeRequest: the path and the time, as API Gateway sends them on the $default stage', () => {
  it('has no stage segment, and writes time as API Gateway does', () => {
    const event = eventOf(request('/api/acme/projects'), new Date('2020-03-12T19:03:58Z'));
    expect(event).toMatchObject({
      rawPath: '/api/acme/projects',
      requestContext: { stage: '$default', http: { path: '/api/acme/projects' }, time: '12/Mar/2020:19:03:58 +0000' },
    });
  });
});
