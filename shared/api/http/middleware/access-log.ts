import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { elapsedMs } from '../../clock.ts';
import { readsTable, type ServedRoute } from '../../routes.ts';
import type { Context, Logged, TeamResolved, Timed } from '../context.ts';
import { METRICS_NAMESPACE, STACK_DIMENSION } from '../../../metrics.ts';

/**
 * The access line's metrics, by the dimensions they are published with. Dimensions stay few
 * (the stack: one; route: one of four functions; outcome: one of seven classes), so the metrics stay
 * few too: never a team, a token or a request id. Outside a stack, the line leaves Stack out.
 */
export const ACCESS_LINE_METRICS = [
  { dimensions: [STACK_DIMENSION, 'route', 'outcome'], metrics: [{ Name: 'Requests', Unit: 'Count' }] },
  {
    dimensions: [STACK_DIMENSION, 'route'],
    metrics: [
      { Name: 'Latency', Unit: 'Milliseconds' },
      { Name: 'ColdStart', Unit: 'Count' },
      // Only the data functions carry these two: the OpenAPI document reads no table.
      { Name: 'DynamoDBRoundTrips', Unit: 'Count' },
      { Name: 'DynamoDBReadCapacity', Unit: 'Count' },
    ],
  },
] as const;

/** The outcomes a function answers with: the values of the `outcome` dimension. */
export const OUTCOMES = ['2xx', '304', '401', '403', '404', '422', '5xx'] as const;

type LogContext = Context & Logged & Partial<Timed> & TeamResolved;
type Request = {
  event: APIGatewayProxyEventV2 | null | undefined;
  context: LogContext;
  response?: APIGatewayProxyStructuredResultV2 | null;
};

const outcomeOf = (status: number) => (status >= 500 ? '5xx' : status < 300 ? '2xx' : String(status));

/**
 * One line per request, success or failure, that is also a CloudWatch embedded metric format
 * document: CloudWatch Logs extracts its metrics from the line as it arrives, with no API call
 * and no extra line (docs/operations.md). Besides the metrics: the status, the API Gateway
 * request id and the team the request resolved to (never the raw path segment: a caller can put
 * anything there, a token pasted in the wrong place). The request's logger adds its Lambda request
 * id and cold start, the same cold start as the ColdStart metric. It runs outermost, so it sees
 * the status the client gets.
 */
export function accessLog(
  route: ServedRoute,
  /** The stack's name (config.ts, readStackName), the Stack dimension's value; none outside a stack. */
  stack?: string,
): MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, LogContext> {
  // Built once per function: a request adds only the line's own values.
  const directives = ACCESS_LINE_METRICS.map(({ dimensions, metrics }) => ({
    Namespace: METRICS_NAMESPACE,
    Dimensions: [stack === undefined ? dimensions.filter((name) => name !== STACK_DIMENSION) : dimensions],
    Metrics: metrics.filter((metric) => readsTable(route) || !metric.Name.startsWith('DynamoDB')),
  }));
  const dimensionValues = stack === undefined ? {} : { [STACK_DIMENSION]: stack };
  const logRequest = ({ event, context, response }: Request) => {
    const status = response?.statusCode ?? 500;
    context.log.info('request', {
      _aws: { Timestamp: Date.now(), CloudWatchMetrics: directives },
      ...dimensionValues,
      route: route.name,
      outcome: outcomeOf(status),
      status,
      // The event may be anything a direct invoke passed (handlers.ts answers it 500): read it warily.
      apiRequestId: event?.requestContext?.requestId,
      team: context.teamId ?? null,
      Requests: 1,
      Latency: context.startedAt === undefined ? 0 : elapsedMs(context.startedAt),
      ColdStart: context.coldStart ? 1 : 0,
      ...(readsTable(route) && {
        DynamoDBRoundTrips: context.usage?.roundTrips ?? 0,
        DynamoDBReadCapacity: context.usage?.readCapacity ?? 0,
      }),
    });
  };
  return { after: logRequest, onError: logRequest };
}
