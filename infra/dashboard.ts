import type { Stack } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { Dashboard, GraphWidget, type IMetric, type IWidget, LogQueryWidget, Stats } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { OUTCOMES } from '../shared/api/http/middleware/access-log.ts';
import { type FunctionName, ROUTES, SERVED_ROUTES } from '../shared/api/routes.ts';
import { stackMetric, percentOfRequests, READS, throttledRequests, unauthenticated } from './api-metrics.ts';

interface DashboardProps {
  api: HttpApi;
  table: ITable;
  functions: Record<FunctionName, NodejsFunction>;
  /** Rows after the API's (the sync's, when deployed). */
  more?: IWidget[][];
}

/** What an on-call engineer asks first: which route fails how, how slow, cold starts, 401s and 429s, and DynamoDB. */
export function dashboard(stack: Stack, { api, table, functions: byRoute, more = [] }: DashboardProps): Dashboard {
  const graph = (title: string, left: IMetric[]) => new GraphWidget({ title, left });
  const routes = SERVED_ROUTES.map((route) => route.name);
  const functions = Object.values(byRoute);
  return new Dashboard(stack, 'Dashboard', {
    widgets: [
      routes.map((route) =>
        graph(
          `Requests by outcome: ${route}`,
          OUTCOMES.map((outcome) => stackMetric(stack, 'Requests', { route, outcome })),
        ),
      ),
      ['p50', 'p90', 'p99'].map((p) =>
        graph(
          `Latency ${p} by route (ms)`,
          routes.map((route) => stackMetric(stack, 'Latency', { route }, p)),
        ),
      ),
      [
        graph(
          'Cold starts by route',
          routes.map((route) => stackMetric(stack, 'ColdStart', { route })),
        ),
        new LogQueryWidget({
          title: 'Cold starts and init duration',
          logGroupNames: functions.map((fn) => fn.logGroup.logGroupName),
          queryLines: [
            'filter @type = "REPORT" and ispresent(@initDuration)',
            'stats count(*) as coldStarts, avg(@initDuration) as avgInitMs, max(@initDuration) as maxInitMs ' +
              'by bin(5m)',
          ],
        }),
        graph('401 and 429 (% of requests)', [
          percentOfRequests(api, 'unauthenticated', unauthenticated(stack)),
          percentOfRequests(api, 'throttled', throttledRequests(stack, api)),
        ]),
      ],
      [
        graph(
          'Lambda errors and throttles',
          functions.flatMap((fn) => [fn.metricErrors(), fn.metricThrottles()]),
        ),
        graph(
          'Lambda concurrent executions',
          functions.map((fn) => fn.metric('ConcurrentExecutions', { statistic: Stats.MAXIMUM })),
        ),
        graph('API Gateway 4xx, 5xx and integration latency (p99)', [
          api.metricClientError(),
          api.metricServerError(),
          api.metricIntegrationLatency({ statistic: Stats.p(99) }),
        ]),
      ],
      [
        graph('DynamoDB consumed read capacity and throttled reads', [
          table.metricConsumedReadCapacityUnits(),
          table.metricThrottledRequestsForOperations(READS),
        ]),
        graph('DynamoDB system errors', [table.metricSystemErrorsForOperations(READS)]),
        graph(
          'DynamoDB latency (ms)',
          READS.operations.map((operation) =>
            table.metricSuccessfulRequestLatency({
              dimensionsMap: { TableName: table.tableName, Operation: operation },
            }),
          ),
        ),
        graph(
          'DynamoDB per request (average)',
          ROUTES.flatMap(({ name: route }) =>
            ['DynamoDBRoundTrips', 'DynamoDBReadCapacity'].map((name) =>
              stackMetric(stack, name, { route }, Stats.AVERAGE),
            ),
          ),
        ),
      ],
      ...more,
    ],
  });
}
