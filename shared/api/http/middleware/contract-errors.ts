import type { MiddlewareObj } from '@middy/core';
import httpErrorHandler from '@middy/http-error-handler';
import type { Context, Logged } from '../context.ts';
import { isContractError, toContractError } from '../errors.ts';

/**
 * The error handling, as one unit: every error a request throws answers with its contract body.
 *
 * - classifyErrors runs first (middy runs onError hooks last-used first) and hands on only
 *   contract errors: DynamoDB throttled, unreachable or too slow becomes the 503, anything else
 *   the bare 500. It logs the cause of every 5xx by name and message only (SDK errors carry no
 *   request headers, and the event is never logged).
 * - @middy/http-error-handler then turns the contract error into the response: status, body,
 *   headers. Its own logging is off: the access log records every request.
 */
export function contractErrors(): MiddlewareObj<unknown, unknown, Error, Context & Logged>[] {
  return [httpErrorHandler({ logger: false }), classifyErrors()];
}

function classifyErrors(): MiddlewareObj<unknown, unknown, Error, Context & Logged> {
  return {
    onError: function classifyError(request) {
      const { error } = request;
      if (isContractError(error) && error.statusCode < 500) return;
      request.context.log.error('request failed', { error: error?.name, detail: error?.message });
      request.error = toContractError(error);
    },
  };
}
