import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { headWithoutBody } from '../../../shared/api/http/middleware/head.ts';
import { requestDeadline } from '../../../shared/api/http/middleware/request-deadline.ts';
import { DATABASE_WAIT_MS } from '../../../shared/api/function-settings.ts';
import { toContractError } from '../../../shared/api/http/errors.ts';
import { jsonResponse } from '../../../shared/api/http/envelope.ts';
import type { Timed } from '../../../shared/api/http/context.ts';
import { apiContext, apiEvent, apiRequest } from '../../support/middy-request.ts';
import { monotonicMs } from '../../../shared/api/clock.ts';

/**
 * Two steps every function runs around its own work, each on its own with a hand-built request:
 * the request's clock and deadline (request-deadline.ts), and HEAD's dropped body (head.ts). What
 * each does before the handler, after it, and on error. (Header names as `sam local` writes them:
 * test/integration/bundled.test.ts.)
 */

function headEvent(): APIGatewayProxyEventV2 {
  const event = apiEvent();
  return {
    ...event,
    routeKey: 'HEAD /api/{team}/projects',
    requestContext: { ...event.requestContext, http: { ...event.requestContext.http, method: 'HEAD' } },
  };
}

const TAGGED = jsonResponse(200, '{"data":[]}', { ETag: '"abc"' });
const FORBIDDEN = jsonResponse(403, '{"message":"This action is unauthorized."}');

describe('HEAD: the body dropped, nothing else', () => {
  it('has no before step: a HEAD runs as the GET would', () => {
    expect(headWithoutBody().before).toBeUndefined();
  });

  it("after the handler, drops a HEAD response's body and keeps its status and headers", async () => {
    const request = apiRequest({ event: headEvent(), response: TAGGED });
    await headWithoutBody().after!(request as never);
    expect(request.response).toEqual({ statusCode: 200, headers: TAGGED.headers });
    expect(request.response).not.toHaveProperty('body');
  });

  it("on error, drops the body the error handler wrote, keeping the error's status and headers", async () => {
    const request = apiRequest({ event: headEvent(), response: FORBIDDEN, error: new Error('forbidden') });
    await headWithoutBody().onError!(request as never);
    expect(request.response).toEqual({ statusCode: 403, headers: FORBIDDEN.headers });
  });

  it('leaves a GET response whole', async () => {
    const request = apiRequest({ response: TAGGED });
    await headWithoutBody().after!(request as never);
    expect(request.response).toBe(TAGGED);
  });

  it('leaves a request without a response, or without an event, as it is', async () => {
    const request = apiRequest({ event: headEvent(), response: null });
    await headWithoutBody().onError!(request as never);
    expect(request.response).toBeNull();
    const eventless = { ...apiRequest({ response: TAGGED }), event: null };
    await headWithoutBody().onError!(eventless as never);
    expect(eventless.response).toBe(TAGGED);
  });
});

describe("the request's clock and deadline", () => {
  function fresh() {
    const { startedAt: _s, signal: _d, ...context } = apiContext();
    return { ...apiRequest(), context, internal: {} } as never as { context: Timed; internal: object };
  }

  it('before the handler, starts the clock and hands the request a signal not yet aborted', async () => {
    const request = fresh();
    const before = monotonicMs();
    await requestDeadline().before!(request as never);
    expect(request.context.startedAt).toBeGreaterThanOrEqual(before);
    expect(request.context.signal.aborted).toBe(false);
  });

  it(`aborts the signal with a TimeoutError, which answers 503, once the request has waited ${DATABASE_WAIT_MS} ms`, async () => {
    vi.useFakeTimers();
    try {
      const request = fresh();
      await requestDeadline().before!(request as never);
      vi.advanceTimersByTime(DATABASE_WAIT_MS - 1);
      expect(request.context.signal.aborted).toBe(false);
      vi.advanceTimersByTime(1);
      expect((request.context.signal.reason as DOMException).name).toBe('TimeoutError');
      expect(toContractError(request.context.signal.reason).statusCode).toBe(503);
    } finally {
      vi.useRealTimers();
    }
  });

  it.each(['after', 'onError'] as const)(
    '%s: stops the deadline, so the signal never fires once the request ended',
    async (hook) => {
      vi.useFakeTimers();
      try {
        const request = fresh();
        const middleware = requestDeadline();
        await middleware.before!(request as never);
        await middleware[hook]!(request as never);
        vi.advanceTimersByTime(DATABASE_WAIT_MS * 2);
        expect(request.context.signal.aborted).toBe(false);
      } finally {
        vi.useRealTimers();
      }
    },
  );
});
