import type { MiddlewareObj } from '@middy/core';
import httpHeaderNormalizer from '@middy/http-header-normalizer';

/**
 * What every later step may assume of the event, checked once at the front of the chain:
 *
 * - checkEvent: the event is an object. A direct invoke can pass anything JSON (`null`, `42`,
 *   `"x"`, `[]`); that is the caller's bug, answered with the contract's bare 500 (contract-errors.ts
 *   logs why) instead of a runtime error from the first step that reads a field.
 * - @middy/http-header-normalizer: header names in lower case. API Gateway lower-cases them, but
 *   `sam local start-api` and `sam local invoke` pass them as the client wrote them
 *   (`Authorization`, `Host`, `If-None-Match`), and every later step reads lower-case names:
 *   authorize, the base URL of links, conditional GETs. It touches `headers` only (payload 2.0's
 *   `cookies` are left alone). Repeated headers arrive joined with commas from API Gateway and SAM
 *   alike; only a hand-written event can hold one name in two cases, and then the last one wins.
 */
export function requestEvent(): MiddlewareObj[] {
  return [checkEvent(), httpHeaderNormalizer() as MiddlewareObj];
}

class NotAnEventError extends Error {
  override readonly name = 'NotAnEventError';
}

function checkEvent(): MiddlewareObj {
  return {
    before: function checkEventIsObject(request) {
      const { event } = request as { event: unknown };
      if (typeof event !== 'object' || event === null || Array.isArray(event)) {
        throw new NotAnEventError(`the event is not an API Gateway event object (${event === null ? 'null' : Array.isArray(event) ? 'an array' : typeof event})`);
      }
    },
  };
}
