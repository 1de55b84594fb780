import type { Duration, Stack } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { type IMetric, MathExpression, Metric, Stats } from 'aws-cdk-lib/aws-cloudwatch';
import { Operation } from 'aws-cdk-lib/aws-dynamodb';
import { ROUTES } from '../shared/api/routes.ts';
import { METRICS_NAMESPACE, STACK_DIMENSION } from '../shared/metrics.ts';

/** The table operations the functions call. Metrics use CloudWatch's default period, 5 minutes, throughout. */
export const READS = { operations: [Operation.BATCH_GET_ITEM, Operation.QUERY] };

/**
 * A metric the service publishes itself: the access line's (shared/api/http/middleware/access-log.ts),
 * the stack's count of 429s, or the sync's (sync-metrics.ts); this stack's, by its Stack dimension.
 */
export function stackMetric(
  stack: Stack,
  name: string,
  dimensionsMap: Record<string, string>,
  statistic: string = Stats.SUM,
  period?: Duration,
) {
  return new Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { [STACK_DIMENSION]: stack.stackName, ...dimensionsMap },
    statistic,
    period,
    label: [name, ...Object.values(dimensionsMap)].join(' '),
  });
}

/** The 429s API Gateway answered, counted from its access log (api-alarms.ts, the metric filter). */
export function throttledRequests(stack: Stack, api: HttpApi) {
  return stackMetric(stack, 'ThrottledRequests', { ApiId: api.apiId });
}

/** A share of the API's requests; below 20 requests in 5 minutes none, as one answer is not a rate. */
export function percentOfRequests(api: HttpApi, id: string, part: IMetric) {
  const requests = api.metricCount({ statistic: Stats.SUM });
  return new MathExpression({
    expression: `IF(requests >= 20, 100 * ${id} / requests, 0)`,
    usingMetrics: { [id]: part, requests },
    label: `${id} %`,
  });
}

/** The 401s of every data route, summed. */
export function unauthenticated(stack: Stack) {
  const byRoute = Object.fromEntries(
    ROUTES.map(({ name }) => [name, stackMetric(stack, 'Requests', { route: name, outcome: '401' })]),
  );
  return new MathExpression({ expression: Object.keys(byRoute).join(' + '), usingMetrics: byRoute, label: '401s' });
}
