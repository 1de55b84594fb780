import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { headWithoutBody } from '../../../shared/http/middleware/head.ts';
import { requestDeadline } from '../../../shared/http/middleware/request-deadline.ts';
import { requestEvent } from '../../../shared/http/middleware/request-event.ts';
import { FUNCTION_TIMEOUT_MS } from '../../../shared/function-settings.ts';
import { jsonResponse } from '../../../shared/http/response.ts';
import type { Context, Timed } from '../../../shared/http/context.ts';
import { apiContext, apiEvent, apiRequest } from '../../support/middy-request.ts';

/**
 * The three steps every function runs around its own work, each on its own with a hand-built
 * request: the event check and header normalizer (request-event.ts), the request's clock and
 * deadline (request-deadline.ts), and HEAD's dropped body (head.ts). What each does before the
 * handler, after it, and on error.
 */

function headEvent(): APIGatewayProxyEventV2 {
  const event = apiEvent();
  return { ...event, routeKey: 'HEAD /api/{team}/projects', requestContext: { ...event.requestContext, http: { ...event.requestContext.http, method: 'HEAD' } } };
}

const TAGGED = jsonResponse(200, '{"data":[]}', { ETag: '"abc"' });
const FORBIDDEN = jsonResponse(403, '{"message":"This action is unauthorized."}');

describe('HEAD: the body dropped, nothing else', () => {
  it('has no before step: a HEAD runs as the GET would', () => {
    expect(headWithoutBody().before).toBeUndefined();
  });

  it('after the handler, drops a HEAD response\'s body and keeps its status and headers', async () => {
    const request = apiRequest({ event: headEvent(), response: TAGGED });
    await headWithoutBody().after!(request as never);
    expect(request.response).toEqual({ statusCode: 200, headers: TAGGED.headers });
    expect(request.response).not.toHaveProperty('body');
  });

  it('on error, drops the body the error handler wrote, keeping the error\'s status and headers', async () => {
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

describe('the event check and the header normalizer', () => {
  async function before(event: unknown) {
    const request = { ...apiRequest(), event } as never as { event: APIGatewayProxyEventV2 };
    for (const step of requestEvent() as MiddlewareObj[]) await step.before?.(request as never);
    return request.event;
  }

  it.each([['null', null], ['a number', 42], ['a string', 'x'], ['an array', []], ['undefined', undefined]])(
    'refuses an event that is %s before any later step reads it, naming what it was',
    async (_what, event) => {
      await expect(before(event)).rejects.toThrow(/the event is not an API Gateway event object/);
    },
  );

  it('lower-cases header names as SAM passes them, values untouched', async () => {
    const event = apiEvent();
    const sam = { ...event, headers: { Authorization: 'Bearer Tra_Secret', Host: 'localhost:3000', 'If-None-Match': '"abc"' } };
    expect((await before(sam)).headers).toEqual({ authorization: 'Bearer Tra_Secret', host: 'localhost:3000', 'if-none-match': '"abc"' });
  });

  it('keeps lower-case headers as API Gateway sends them', async () => {
    const event = apiEvent({ headers: { authorization: 'Bearer x' } });
    expect((await before(event)).headers).toEqual(event.headers);
  });

  it('has no after or error step', () => {
    for (const step of requestEvent() as MiddlewareObj[]) {
      expect(step.after).toBeUndefined();
      expect(step.onError).toBeUndefined();
    }
  });
});

describe('the request\'s clock and deadline', () => {
  function fresh(remainingMs?: number): { context: Context & Partial<Timed> } {
    const { startedAt: _s, deadline: _d, ...context } = apiContext({ getRemainingTimeInMillis: remainingMs === undefined ? undefined : () => remainingMs } as never);
    return { ...apiRequest(), context } as never;
  }

  it('before the handler, starts the clock and sets the deadline half a second before Lambda\'s timeout', async () => {
    const request = fresh(3_000);
    const before = performance.now();
    await requestDeadline().before!(request as never);
    const { startedAt, deadline } = request.context as Timed;
    expect(startedAt).toBeGreaterThanOrEqual(before);
    expect(deadline.at - startedAt).toBeCloseTo(2_500, 6);
  });

  it('outside Lambda (no remaining time), gives the deployed function\'s budget less the margin', async () => {
    const request = fresh();
    await requestDeadline().before!(request as never);
    const { startedAt, deadline } = request.context as Timed;
    expect(deadline.at - startedAt).toBeCloseTo(FUNCTION_TIMEOUT_MS - 500, 6);
  });

  it('gives a request already at Lambda\'s timeout a short deadline rather than none', async () => {
    const request = fresh(100);
    await requestDeadline().before!(request as never);
    const { startedAt, deadline } = request.context as Timed;
    expect(deadline.at - startedAt).toBeCloseTo(50, 6);
  });

  it.each(['after', 'onError'] as const)('%s: stops the deadline\'s timer, so a signal it made never fires', async (hook) => {
    const request = fresh(600);
    const middleware = requestDeadline();
    await middleware.before!(request as never);
    const signal = (request.context as Timed).deadline.signal();
    await middleware[hook]!(request as never);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(signal.aborted).toBe(false);
  });

  it('without a deadline (an error before the clock started), ends without one', async () => {
    const request = fresh(1_000);
    await expect(Promise.resolve(requestDeadline().onError!(request as never))).resolves.toBeUndefined();
  });
});
