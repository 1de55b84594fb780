import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { FUNCTION_TIMEOUT_MS } from '../../function-settings.ts';
import type { Logger } from '../../log.ts';
import type { ApiContext } from '../context.ts';
import { errorResponse, toHttpError } from '../errors.ts';

type Result = APIGatewayProxyStructuredResultV2;

/** Time kept back from the Lambda timeout to answer 503 instead of being killed. */
const DEADLINE_MARGIN_MS = 500;
/** Outside Lambda (tests, scripts) a request still gets the deployed function's budget. */
const DEFAULT_BUDGET_MS = FUNCTION_TIMEOUT_MS;

/**
 * Starts the clock and the deadline, and maps every error to the contract's body (HttpError as
 * it is, DynamoDB trouble as 503, anything else as a bare 500, logged with its name only).
 */
export function contractErrors(log: Logger): MiddlewareObj<APIGatewayProxyEventV2, Result, Error, ApiContext> {
  return {
    before: function startRequest(request) {
      request.context.startedAt = performance.now();
      const remaining = request.context.getRemainingTimeInMillis?.() ?? DEFAULT_BUDGET_MS;
      request.context.deadline = AbortSignal.timeout(Math.max(remaining - DEADLINE_MARGIN_MS, 50));
    },
    onError: function answerError(request) {
      const httpError = toHttpError(request.error);
      if (httpError.status >= 500) {
        // Name and message only: SDK errors carry no request headers, and we never log the event.
        log.error('request failed', { error: request.error?.name, detail: request.error?.message });
      }
      request.response = errorResponse(httpError);
    },
  };
}
