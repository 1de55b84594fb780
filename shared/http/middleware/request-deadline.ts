import type { MiddlewareObj } from '@middy/core';
import { FUNCTION_TIMEOUT_MS } from '../../function-settings.ts';
import type { Context, Timed } from '../context.ts';

/** Time kept back from the Lambda timeout to answer 503 instead of being killed. */
const DEADLINE_MARGIN_MS = 500;
/** Outside Lambda (tests, the local server) a request still gets the deployed function's budget. */
const DEFAULT_BUDGET_MS = FUNCTION_TIMEOUT_MS;

const TIMER = Symbol('requestDeadlineTimer');
type WithTimer = { [TIMER]?: ReturnType<typeof setTimeout> };

/**
 * Starts the request's clock (`served_in`, the access log) and its deadline: DynamoDB calls are
 * aborted half a second before the function would be killed, so the caller gets the contract's
 * 503 (contract-errors.ts) rather than API Gateway's own 500.
 *
 * One AbortController and one timer per request, the timer cleared when the request ends. Not
 * `AbortSignal.timeout()`: its timer outlives the request (9.5 s on a warm function serving
 * hundreds of requests a second), and the SDK's abort listeners keep each signal, with the request
 * objects they close over, alive until it fires. Measured in a warm loop against DynamoDB Local,
 * that cost the functions 5 to 10% of their CPU per request in garbage collection (bench/README.md).
 */
export function requestDeadline(): MiddlewareObj<unknown, unknown, Error, Context & Timed> {
  const stopClock = (request: WithTimer) => {
    clearTimeout(request[TIMER]);
    request[TIMER] = undefined;
  };
  return {
    before: function startClock(request) {
      request.context.startedAt = performance.now();
      const remaining = request.context.getRemainingTimeInMillis?.() ?? DEFAULT_BUDGET_MS;
      const controller = new AbortController();
      const timer = setTimeout(abortRequest, Math.max(remaining - DEADLINE_MARGIN_MS, 50), controller);
      // The deadline never keeps a process alive on its own (the local server, tests).
      timer.unref();
      (request as WithTimer)[TIMER] = timer;
      request.context.deadline = controller.signal;
    },
    after: function stopRequestClock(request) {
      stopClock(request as WithTimer);
    },
    onError: function stopFailedRequestClock(request) {
      stopClock(request as WithTimer);
    },
  };
}

function abortRequest(controller: AbortController) {
  // The same reason AbortSignal.timeout gives: the SDK and p-retry pass it on, and it answers 503.
  controller.abort(new DOMException('the request deadline passed', 'TimeoutError'));
}
