import type { MiddlewareObj } from '@middy/core';
import { monotonicMs } from '../../clock.ts';
import { DATABASE_WAIT_MS } from '../../function-settings.ts';
import { DatabaseUsage } from '../../team-reader.ts';
import type { Context, Timed } from '../context.ts';

type Internal = { deadline?: NodeJS.Timeout };

/**
 * Starts the request's clock (`served_in`, the access line), its DynamoDB usage, and its one deadline: an
 * AbortController aborted DATABASE_WAIT_MS after the request began, whose signal every DynamoDB
 * call of the request carries (the SDK and p-retry stop at once), so the caller gets the
 * contract's 503 (contract-errors.ts) instead of waiting on. Middy's own timeoutEarlyInMillis
 * covers only the handler, and the token is read before it.
 */
export function requestDeadline(): MiddlewareObj<unknown, unknown, Error, Context & Timed, Internal> {
  return {
    before: function startClock(request) {
      const controller = new AbortController();
      request.context.startedAt = monotonicMs();
      request.context.signal = controller.signal;
      request.context.usage = new DatabaseUsage();
      // A TimeoutError, as AbortSignal.timeout() gives: answered 503 (errors.ts).
      const abort = () =>
        controller.abort(new DOMException('the request waited on the database too long', 'TimeoutError'));
      request.internal.deadline = setTimeout(abort, DATABASE_WAIT_MS).unref();
    },
    after: stopClock,
    onError: stopClock,
  };
}

function stopClock(request: { internal: Internal }): void {
  clearTimeout(request.internal.deadline);
}
