import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentHandler } from '../../shared/api/http/handlers.ts';
import { apiContext, apiEvent } from '../support/middy-request.ts';

/**
 * What every function does around its own work (handlers.ts, apiFunction), through the one function
 * that reads no data: the OpenAPI document's. The data functions' answers to the same events are
 * compared with API Gateway's in test/infra/bundled.test.ts, against DynamoDB Local.
 */
let serve: ReturnType<typeof documentHandler>;
// Put back after the file: unit files share their worker process (vitest.config.ts, isolate: false).
const logLevel = process.env.LOG_LEVEL;
beforeAll(() => {
  process.env.LOG_LEVEL = 'SILENT';
  serve = documentHandler({ openapi: '3.1.0' });
});
afterAll(() => {
  if (logLevel === undefined) delete process.env.LOG_LEVEL;
  else process.env.LOG_LEVEL = logLevel;
});

const event = (headers: Record<string, string>, method = 'GET') => {
  const built = apiEvent();
  return {
    ...built,
    rawPath: '/api/openapi.json',
    headers,
    requestContext: { ...built.requestContext, http: { ...built.requestContext.http, method } },
  };
};

describe('every function', () => {
  it.each(['if-none-match', 'If-None-Match', 'IF-NONE-MATCH'])(
    'reads a header named %s as API Gateway lower-cases it (sam local passes names as written)',
    async (name) => {
      const { ETag, 'Cache-Control': cacheControl } = (await serve(event({}), apiContext())).headers!;
      const again = await serve(event({ [name]: String(ETag) }), apiContext());
      expect(again).toEqual({ statusCode: 304, headers: { ETag, 'Cache-Control': cacheControl } });
    },
  );

  it('answers HEAD with the status and headers of the GET, and no body', async () => {
    const get = await serve(event({}), apiContext());
    expect(await serve(event({}, 'HEAD'), apiContext())).toEqual({ statusCode: 200, headers: get.headers });
  });

  it.each([null, 42, 'GET /api/openapi.json', [], true])(
    "answers a direct invoke's %j, which is no API Gateway event, with the contract's 500",
    async (notAnEvent) => {
      expect(await serve(notAnEvent as never, apiContext())).toEqual({
        statusCode: 500,
        headers: { 'Content-Type': 'application/json; charset=utf-8' },
        body: '{"message":"Server Error"}',
      });
    },
  );
});
