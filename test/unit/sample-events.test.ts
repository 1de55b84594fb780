import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ROUTES } from '../../shared/routes.ts';

/**
 * events/ holds one event per data function in the shape of the AWS SAM CLI's own HttpApi event
 * template (`sam local generate-event apigateway http-api-proxy`; samcli/lib/generated_sample_events/
 * events/apigateway/HttpApi.json), keys in its order, so `sam local invoke -e` and tools that
 * know SAM's events read them as they are. Written by commands/demo/make-sample-events.ts.
 */
const SAM_TEMPLATE_KEYS = [
  'version', 'routeKey', 'rawPath', 'rawQueryString', 'cookies', 'headers', 'queryStringParameters',
  'requestContext', 'body', 'pathParameters', 'isBase64Encoded', 'stageVariables',
];
// The template's requestContext also has `authentication` (mutual TLS) and `authorizer` (JWT):
// this API has neither, and API Gateway sends neither without them.
const SAM_CONTEXT_KEYS = ['accountId', 'apiId', 'domainName', 'domainPrefix', 'http', 'requestId', 'routeKey', 'stage', 'time', 'timeEpoch'];
const SAM_HTTP_KEYS = ['method', 'path', 'protocol', 'sourceIp', 'userAgent'];

const eventOf = (name: string) => JSON.parse(readFileSync(new URL(`../../events/${name}.json`, import.meta.url), 'utf8'));

describe.each(ROUTES.map((r) => [r.name, r] as const))('events/%s.json', (name, route) => {
  it("has the keys of SAM's HttpApi event template, in its order", () => {
    const event = eventOf(name);
    expect(Object.keys(event)).toEqual(SAM_TEMPLATE_KEYS);
    expect(Object.keys(event.requestContext)).toEqual(SAM_CONTEXT_KEYS);
    expect(Object.keys(event.requestContext.http)).toEqual(SAM_HTTP_KEYS);
  });

  it('is a GET of its route, with header names as a client writes them (as sam local start-api passes them)', () => {
    const event = eventOf(name);
    expect(event.routeKey).toBe(`GET ${route.path}`);
    expect(event.requestContext.http.method).toBe('GET');
    expect(event.rawPath).toBe(route.path.replace('{team}', 'acme'));
    expect(Object.keys(event.headers)).toEqual(expect.arrayContaining(['Host', 'Authorization', 'X-Forwarded-Proto']));
    expect(event.headers.Authorization).toBe('Bearer tra_local_demo_only_sample_events_token');
  });
});
