import type { MiddlewareObj } from '@middy/core';
import { Deadline } from '../../deadline.ts';
import { FUNCTION_TIMEOUT_MS } from '../../function-settings.ts';
import type { Context, Timed } from '../context.ts';

/** Time kept back from the Lambda timeout to answer 503 instead of being killed. */
const DEADLINE_MARGIN_MS = 500;
/** Outside Lambda (tests, the local server) a request still gets the deployed function's budget. */
const DEFAULT_BUDGET_MS = FUNCTION_TIMEOUT_MS;

/**
 * Starts the request's clock (`served_in`, the access log) and its deadline: DynamoDB calls end
 * half a second before the function would be killed, so the caller gets the contract's 503
 * (contract-errors.ts) rather than API Gateway's own 500.
 *
 * Not `AbortSignal.timeout()` per request: its timer outlived every request by 9.5 s and, with the
 * SDK's abort listeners, kept each request's objects alive until then. A Deadline makes a signal
 * (and its timer) only for a call that could outlive it (shared/deadline.ts), and the timer goes
 * when the request ends.
 */
export function requestDeadline(): MiddlewareObj<unknown, unknown, Error, Context & Timed> {
  const stop = (request: { context: Partial<Timed> }) => request.context.deadline?.stop();
  return {
    before: function startClock(request) {
      const startedAt = performance.now();
      request.context.startedAt = startedAt;
      const remaining = request.context.getRemainingTimeInMillis?.() ?? DEFAULT_BUDGET_MS;
      request.context.deadline = new Deadline(Math.max(remaining - DEADLINE_MARGIN_MS, 50), startedAt);
    },
    after: function stopRequestClock(request) {
      stop(request);
    },
    onError: function stopFailedRequestClock(request) {
      stop(request);
    },
  };
}
