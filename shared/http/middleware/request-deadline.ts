import type { MiddlewareObj } from '@middy/core';
import { FUNCTION_TIMEOUT_MS } from '../../function-settings.ts';
import type { Context, Timed } from '../context.ts';

/** Time kept back from the Lambda timeout to answer 503 instead of being killed. */
const DEADLINE_MARGIN_MS = 500;
/** Outside Lambda (tests, the local server) a request still gets the deployed function's budget. */
const DEFAULT_BUDGET_MS = FUNCTION_TIMEOUT_MS;

/**
 * Starts the request's clock (`served_in`, the access log) and its deadline: DynamoDB calls are
 * aborted half a second before the function would be killed, so the caller gets the contract's
 * 503 (classify-errors.ts) rather than API Gateway's own 500.
 */
export function requestDeadline(): MiddlewareObj<unknown, unknown, Error, Context & Timed> {
  return {
    before: function startClock(request) {
      request.context.startedAt = performance.now();
      const remaining = request.context.getRemainingTimeInMillis?.() ?? DEFAULT_BUDGET_MS;
      request.context.deadline = AbortSignal.timeout(Math.max(remaining - DEADLINE_MARGIN_MS, 50));
    },
  };
}
