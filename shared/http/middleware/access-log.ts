import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { RequestLogger } from '../../log.ts';
import type { Authorized, Context, FinanceAuthorized, Timed } from '../context.ts';

type LogContext = Context & Partial<Timed> & { access?: Authorized['access'] | FinanceAuthorized['access'] };
type Request = { event: APIGatewayProxyEventV2 | null | undefined; context: LogContext; response?: APIGatewayProxyStructuredResultV2 | null };

/** What the access line says of a request, fixed when its response is. */
type AccessFields = {
  apiRequestId: string | undefined;
  route: string | undefined;
  team: number | null;
  status: number;
  durationMs: number | null;
};

/**
 * One log line per request, success or failure: route, team id, status, duration, and the API
 * Gateway request id (the Lambda request id and cold start come with the request's context,
 * shared/log.ts). It runs outermost, so it sees the status the client gets. The fields are taken
 * when the response is final; the line is written after the response has gone (RequestLogger).
 */
export function accessLog(lines: RequestLogger): MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, LogContext> {
  const record = (request: Request) => lines.afterResponse(request.context, 'info', 'request', accessFields(request));
  return {
    after: function logRequest(request) {
      record(request);
    },
    onError: function logFailedRequest(request) {
      record(request);
    },
  };
}

function accessFields(request: Request): AccessFields {
  const { startedAt, access } = request.context;
  return {
    // The event may be anything a direct invoke passed (request-event.ts answers it 500): read it warily.
    apiRequestId: request.event?.requestContext?.requestId,
    route: request.event?.routeKey,
    // The team the request resolved to, never the raw segment: a caller can put anything
    // (a token pasted in the wrong place) in the path.
    team: access ? ('head' in access ? access.head : access.finance).teamId : null,
    status: request.response?.statusCode ?? 500,
    durationMs: startedAt === undefined ? null : Math.round((performance.now() - startedAt) * 100) / 100,
  };
}
