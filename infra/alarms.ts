import { Duration } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { Alarm, ComparisonOperator, MathExpression, Metric, Stats, TreatMissingData, type IMetric } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { FilterPattern, MetricFilter, type ILogGroup } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { SERVED_ROUTES, type FunctionName } from '../shared/routes.ts';
import { constructName } from './api-functions.ts';
import { StackPart } from './stack-part.ts';

/** Namespace of the metric counted from the access log (HTTP APIs publish no throttle metric). */
export const METRICS_NAMESPACE = 'TeamResourcesApi';

export interface ApiAlarmsProps {
  api: HttpApi;
  accessLogs: ILogGroup;
  functions: Readonly<Record<FunctionName, NodejsFunction>>;
  throttle: { rateLimit: number; burstLimit: number };
  /** Every alarm notifies this SNS topic on ALARM and on OK; without it, alarms have no actions. */
  alarmTopicArn?: string;
}

/**
 * Alarms on what a caller would notice: server errors, slow answers, requests turned away by
 * throttling; and per function, failed and throttled invocations.
 */
export class ApiAlarms extends StackPart {
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: ApiAlarmsProps) {
    super(scope, id);
    const { api, throttle } = props;
    const period = Duration.minutes(5);
    const requests = api.metricCount({ period, statistic: Stats.SUM });
    const serverErrors = api.metricServerError({ period, statistic: Stats.SUM });
    // Below 20 requests in 5 minutes a single 5xx is not a rate; the Lambda Errors alarms still see it.
    const serverErrorRate = new MathExpression({
      expression: 'IF(requests >= 20, 100 * errors / requests, 0)',
      usingMetrics: { requests, errors: serverErrors },
      period,
      label: '5xx responses (% of requests)',
    });
    this.alarm('Api5xxRateAlarm', serverErrorRate, {
      threshold: 5,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      description: 'More than 5% of API requests answered 5xx (500 or 503: DynamoDB failing, throttled or slow) in 2 of the last 3 periods of 5 minutes.',
    });

    this.alarm('ApiLatencyP99Alarm', api.metricLatency({ period, statistic: Stats.p(99) }), {
      threshold: 2_000,
      evaluationPeriods: 3,
      datapointsToAlarm: 3,
      description: 'p99 latency of the API above 2 s for 15 minutes: DynamoDB calls are hitting their 1.5 s timeout and retrying (a cold start takes well under 2 s).',
    });

    // Throttled requests are answered 429 by API Gateway and counted with every other 4xx; the
    // functions never answer 429, so the access log's 429s are exactly the throttled requests.
    new MetricFilter(this, 'ThrottledRequestsFilter', {
      logGroup: props.accessLogs,
      filterPattern: FilterPattern.stringValue('$.status', '=', '429'),
      metricNamespace: METRICS_NAMESPACE,
      metricName: 'ThrottledRequests',
      metricValue: '1',
      dimensions: { ApiId: '$.apiId' },
    });
    const throttled = new Metric({
      namespace: METRICS_NAMESPACE,
      metricName: 'ThrottledRequests',
      dimensionsMap: { ApiId: api.apiId },
      period,
      statistic: Stats.SUM,
    });
    this.alarm('ApiThrottledRequestsAlarm', throttled, {
      threshold: 10,
      evaluationPeriods: 1,
      datapointsToAlarm: 1,
      description: `10 or more requests answered 429 by the stage throttle (${throttle.rateLimit}/s, burst ${throttle.burstLimit}) or the account limit in 5 minutes.`,
    });

    for (const route of SERVED_ROUTES) {
      const fn = props.functions[route.name];
      const name = constructName(route.name);
      this.alarm(`${name}ErrorsAlarm`, fn.metricErrors({ period, statistic: Stats.SUM }), {
        threshold: 1,
        evaluationPeriods: 1,
        datapointsToAlarm: 1,
        description: `The ${route.name} function failed (start-up error, crash or timeout); the handler turns every other error into a response, so any failure is a bug.`,
      });
      this.alarm(`${name}ThrottlesAlarm`, fn.metricThrottles({ period, statistic: Stats.SUM }), {
        threshold: 1,
        evaluationPeriods: 1,
        datapointsToAlarm: 1,
        description: `Lambda throttled the ${route.name} function: the account's concurrency is exhausted, callers get 500.`,
      });
    }

    if (props.alarmTopicArn !== undefined) {
      const action = new SnsAction(Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn));
      for (const alarm of this.alarms) {
        alarm.addAlarmAction(action);
        alarm.addOkAction(action);
      }
    }
  }

  private alarm(id: string, metric: IMetric, options: { threshold: number; evaluationPeriods: number; datapointsToAlarm: number; description: string }) {
    const alarm = new Alarm(this, id, {
      metric,
      threshold: options.threshold,
      evaluationPeriods: options.evaluationPeriods,
      datapointsToAlarm: options.datapointsToAlarm,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      alarmDescription: options.description,
    });
    this.alarms.push(alarm);
  }
}
