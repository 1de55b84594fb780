import type { Stack } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { Alarm, ComparisonOperator, type IMetric, Stats, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { FilterPattern, type LogGroup, MetricFilter } from 'aws-cdk-lib/aws-logs';
import type { FunctionName } from '../shared/api/routes.ts';
import { METRICS_NAMESPACE, STACK_DIMENSION } from '../shared/metrics.ts';
import { percentOfRequests, READS, throttledRequests, unauthenticated } from './api-metrics.ts';
import { ACCESS_LOG_STACK_FIELD } from './http-api.ts';
import { constructName } from './route-functions.ts';

interface ApiAlarmsProps {
  api: HttpApi;
  table: ITable;
  accessLogs: LogGroup;
  functions: Record<FunctionName, NodejsFunction>;
}

/**
 * Alarms on what a caller of the API would notice, each saying where to look: 5xx, latency, 429s,
 * DynamoDB throttling and errors, a rise of 401s, and each function's errors and throttles.
 */
export function apiAlarms(stack: Stack, { api, table, accessLogs, functions }: ApiAlarmsProps): Alarm[] {
  const alarms: Alarm[] = [];
  const alarm = (
    id: string,
    metric: IMetric,
    threshold: number,
    evaluationPeriods: number,
    datapointsToAlarm: number,
    description: string,
  ) =>
    alarms.push(
      new Alarm(stack, id, {
        metric,
        threshold,
        evaluationPeriods,
        datapointsToAlarm,
        alarmDescription: description,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );

  for (const [route, fn] of Object.entries(functions) as [FunctionName, NodejsFunction][]) {
    const name = constructName(route);
    alarm(
      `${name}ErrorsAlarm`,
      fn.metricErrors(),
      1,
      1,
      1,
      `The ${route} function failed (start-up error, crash or timeout), which is a bug: see its log group.`,
    );
    alarm(
      `${name}ThrottlesAlarm`,
      fn.metricThrottles(),
      1,
      1,
      1,
      `Lambda throttled the ${route} function (callers get 500): see concurrent executions on the dashboard.`,
    );
  }

  alarm(
    'Api5xxRateAlarm',
    percentOfRequests(api, 'errors', api.metricServerError()),
    5,
    3,
    2,
    'Over 5% of requests answered 5xx in 2 of 3 periods of 5 minutes: ' +
      '503s are DynamoDB failing or slow (see its alarms), 500s a bug (see the function logs).',
  );
  alarm(
    'ApiLatencyP99Alarm',
    api.metricLatency({ statistic: Stats.p(99) }),
    2_000,
    3,
    3,
    'p99 latency above 2 s for 15 minutes: ' +
      'DynamoDB calls are timing out and retrying (see DynamoDB latency on the dashboard).',
  );

  // Throttled requests are answered 429 by API Gateway and counted with every other 4xx; the
  // functions never answer 429, so the access log's 429s are exactly the throttled requests.
  new MetricFilter(stack, 'ThrottledRequestsFilter', {
    logGroup: accessLogs,
    filterPattern: FilterPattern.stringValue('$.status', '=', '429'),
    metricNamespace: METRICS_NAMESPACE,
    metricName: 'ThrottledRequests',
    metricValue: '1',
    // The stack's name is a literal of the access line (http-api.ts): a filter's dimension comes from the line.
    dimensions: { [STACK_DIMENSION]: `$.${ACCESS_LOG_STACK_FIELD}`, ApiId: '$.apiId' },
  });
  alarm(
    'ApiThrottledRequestsAlarm',
    throttledRequests(stack, api),
    10,
    1,
    1,
    '10 or more 429s in 5 minutes from the stage throttle or the account limit: ' +
      'raise it, or find the caller in the access log.',
  );

  alarm(
    'DynamoDBThrottlingAlarm',
    table.metricThrottledRequestsForOperations(READS),
    10,
    2,
    2,
    'DynamoDB throttled 10 or more reads in each of 10 minutes, answered 503: ' +
      "see consumed capacity on the dashboard, and whether one team's partition is hot.",
  );
  alarm(
    'DynamoDBSystemErrorsAlarm',
    table.metricSystemErrorsForOperations(READS),
    1,
    1,
    1,
    'DynamoDB failed reads with its own 500s, answered 503: ' +
      'check the AWS Health Dashboard for DynamoDB in this region.',
  );
  alarm(
    'Api401RiseAlarm',
    unauthenticated(stack),
    100,
    3,
    3,
    '100 or more 401s in each of 15 minutes: someone guessing tokens, or a client that lost its own; ' +
      'find them in the access log (status 401, ip).',
  );
  return alarms;
}
