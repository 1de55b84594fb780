import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { CACHE_CONTROL, conditionalGet, entityTag } from '../../../shared/http/middleware/conditional-get.ts';
import { jsonResponse } from '../../../shared/http/response.ts';
import { apiEvent, apiRequest, type ApiRequest } from '../../support/middy-request.ts';

/**
 * The conditional GET middleware on its own: after the handler, a 200 gets a strong ETag over its
 * body without `served_in`, and Cache-Control; a request whose If-None-Match names that tag gets
 * a 304 with no body instead. Nothing else is tagged.
 */
const middleware = conditionalGet();
const BODY = '{"data":[{"id":1}],"results":1,"served_in":"4.21ms"}';

function answered(response: APIGatewayProxyStructuredResultV2 | null, ifNoneMatch?: string): ApiRequest {
  return apiRequest({ event: apiEvent({ headers: ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch } }), response });
}

async function after(request: ApiRequest): Promise<APIGatewayProxyStructuredResultV2 | null | undefined> {
  await middleware.after!(request);
  return request.response;
}

describe('conditional GET, before the handler', () => {
  it('has no before step: it acts only on the handler\'s answer', () => {
    expect(middleware.before).toBeUndefined();
  });
});

describe('conditional GET, after the handler', () => {
  it('adds a strong ETag and Cache-Control: private, no-cache to a 200, keeping its status, body and headers', async () => {
    const response = await after(answered(jsonResponse(200, BODY, { 'X-Kept': 'yes' })));
    expect(response).toEqual({
      statusCode: 200,
      body: BODY,
      headers: { 'Content-Type': 'application/json; charset=utf-8', 'X-Kept': 'yes', ETag: entityTag(BODY), 'Cache-Control': CACHE_CONTROL },
    });
    expect(CACHE_CONTROL).toBe('private, no-cache');
    expect(entityTag(BODY)).toMatch(/^"[A-Za-z0-9_-]{32}"$/);
  });

  it('gives bodies that differ only in served_in the same tag', async () => {
    const first = await after(answered(jsonResponse(200, BODY)));
    const second = await after(answered(jsonResponse(200, BODY.replace('4.21ms', '0.5ms'))));
    expect(second?.headers?.ETag).toBe(first?.headers?.ETag);
  });

  it('gives bodies that differ in content different tags', async () => {
    const first = await after(answered(jsonResponse(200, BODY)));
    const second = await after(answered(jsonResponse(200, BODY.replace('"id":1', '"id":2'))));
    expect(second?.headers?.ETag).not.toBe(first?.headers?.ETag);
  });

  it('answers 304 with only ETag and Cache-Control, and no body, when If-None-Match names the current tag', async () => {
    const tag = entityTag(BODY);
    expect(await after(answered(jsonResponse(200, BODY), tag))).toEqual({ statusCode: 304, headers: { ETag: tag, 'Cache-Control': CACHE_CONTROL } });
  });

  it.each([
    ['a weak form of the tag', (tag: string) => `W/${tag}`],
    ['the tag among others', (tag: string) => `"other", ${tag} , W/"third"`],
    ['*', () => '*'],
  ])('answers 304 when If-None-Match is %s', async (_kind, header) => {
    expect((await after(answered(jsonResponse(200, BODY), header(entityTag(BODY)))))?.statusCode).toBe(304);
  });

  it('answers the 200 with its tag when If-None-Match names another tag', async () => {
    const response = await after(answered(jsonResponse(200, BODY), '"some-older-tag"'));
    expect(response?.statusCode).toBe(200);
    expect(response?.body).toBe(BODY);
    expect(response?.headers?.ETag).toBe(entityTag(BODY));
  });

  it('leaves an error response untouched, even when If-None-Match is *', async () => {
    const notFound = () => jsonResponse(404, '{"message":"Not Found"}');
    expect(await after(answered(notFound(), '*'))).toEqual(notFound());
  });

  it('leaves a request with no response yet untouched', async () => {
    expect(await after(answered(null))).toBeNull();
  });
});

describe('conditional GET, on error', () => {
  it('has no onError step: error responses are never tagged or made conditional', () => {
    expect(middleware.onError).toBeUndefined();
  });
});
