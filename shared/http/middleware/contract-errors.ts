import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { Logger } from '../../log.ts';
import type { ApiContext } from '../context.ts';
import { errorResponse, toHttpError } from '../errors.ts';

type Result = APIGatewayProxyStructuredResultV2;

/** Time kept back from the Lambda timeout to answer 503 instead of being killed. */
const DEADLINE_MARGIN_MS = 500;
/** Outside Lambda (tests, scripts) a request still gets a deadline. */
const DEFAULT_BUDGET_MS = 10_000;

let coldStart = true;

/**
 * Outermost middleware: starts the clock and the deadline, maps every error to the contract's
 * body (HttpError as it is, DynamoDB trouble as 503, anything else as a bare 500), and writes
 * one log line per request.
 */
export function contractErrors(log: Logger): MiddlewareObj<APIGatewayProxyEventV2, Result, Error, ApiContext> {
  return {
    before: function startRequest(request) {
      request.context.startedAt = performance.now();
      const remaining = request.context.getRemainingTimeInMillis?.() ?? DEFAULT_BUDGET_MS;
      request.context.deadline = AbortSignal.timeout(Math.max(remaining - DEADLINE_MARGIN_MS, 50));
    },
    after: function logRequest(request) {
      logLine(log, request.event, request.context, request.response?.statusCode ?? 200);
    },
    onError: function answerError(request) {
      const httpError = toHttpError(request.error);
      if (httpError.status >= 500) {
        // Name and message only: SDK errors carry no request headers, and we never log the event.
        log.error('request failed', { requestId: request.context.awsRequestId, error: request.error?.name, detail: request.error?.message });
      }
      request.response = errorResponse(httpError);
      logLine(log, request.event, request.context, httpError.status);
    },
  };
}

function logLine(log: Logger, event: APIGatewayProxyEventV2, context: ApiContext, status: number) {
  log.info('request', {
    requestId: context.awsRequestId,
    route: event.routeKey,
    team: event.pathParameters?.team,
    status,
    durationMs: Math.round((performance.now() - context.startedAt) * 100) / 100,
    coldStart,
  });
  coldStart = false;
}
