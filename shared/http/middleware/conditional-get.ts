import { createHash } from 'node:crypto';
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

type Result = APIGatewayProxyStructuredResultV2;

/** Per-user data: a shared cache must not keep it; a client must ask again, with its ETag. */
export const CACHE_CONTROL = 'private, no-cache';

// `served_in` is always the body's last key; it changes on every request and is not content.
const SERVED_IN = /,"served_in":"[^"]*"\}$/;

/** A strong ETag over the body without `served_in`. */
export function entityTag(body: string): string {
  return `"${createHash('sha256').update(body.replace(SERVED_IN, '}')).digest('base64url').slice(0, 32)}"`;
}

/** If-None-Match uses the weak comparison (RFC 9110 13.1.2): W/ prefixes do not matter. */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag);
}

/**
 * Conditional GETs: every 200 carries an ETag and Cache-Control; a request whose If-None-Match
 * names the current tag gets 304 with no body. Errors are never cached or conditional.
 */
export function conditionalGet(): MiddlewareObj<APIGatewayProxyEventV2, Result> {
  return {
    after: function tagResponse(request) {
      const response = request.response;
      if (!response || response.statusCode !== 200 || typeof response.body !== 'string') return;
      const etag = entityTag(response.body);
      const headers = { ...response.headers, ETag: etag, 'Cache-Control': CACHE_CONTROL };
      if (matchesIfNoneMatch(request.event.headers?.['if-none-match'], etag)) {
        request.response = { statusCode: 304, headers: { ETag: etag, 'Cache-Control': CACHE_CONTROL } };
      } else {
        request.response = { ...response, headers };
      }
    },
  };
}
