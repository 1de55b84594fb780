import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { Logger } from '../../log.ts';
import type { Authorized, Context, FinanceAuthorized, Timed } from '../context.ts';

type LogContext = Context & Partial<Timed> & { access?: Authorized['access'] | FinanceAuthorized['access'] };
type Request = { event: APIGatewayProxyEventV2 | null | undefined; context: LogContext; response?: APIGatewayProxyStructuredResultV2 | null };

/**
 * One log line per request, success or failure: route, team id, status, duration, and the API
 * Gateway request id (the Lambda request id and cold start come from injectLambdaContext).
 * It runs outermost, so it sees the status the client gets.
 */
export function accessLog(log: Logger): MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, LogContext> {
  const write = (request: Request) => {
    log.info('request', {
      // The event may be anything a direct invoke passed (request-event.ts answers it 500): read it warily.
      apiRequestId: request.event?.requestContext?.requestId,
      route: request.event?.routeKey,
      // The team the request resolved to, never the raw segment: a caller can put anything
      // (a token pasted in the wrong place) in the path.
      team: teamOf(request.context.access),
      status: request.response?.statusCode ?? 500,
      durationMs: request.context.startedAt === undefined ? null : Math.round((performance.now() - request.context.startedAt) * 100) / 100,
    });
  };
  const teamOf = (access: LogContext['access']) => (access ? ('head' in access ? access.head : access.finance).teamId : null);
  return {
    after: function logRequest(request) {
      write(request);
    },
    onError: function logFailedRequest(request) {
      write(request);
    },
  };
}
