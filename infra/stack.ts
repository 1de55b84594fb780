import { CfnOutput, Duration, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  DomainName,
  HttpApi,
  HttpMethod,
  HttpStage,
  LogGroupLogDestination,
  PayloadFormatVersion,
  type CorsPreflightOptions,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import { Alarm, ComparisonOperator, MathExpression, Metric, Stats, TreatMissingData, type IMetric } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { AttributeType, BillingMode, Table, TableEncryption, type ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Effect, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { FilterPattern, LogGroup, MetricFilter, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { readApiConfig } from '../shared/config.ts';
import { readsTable, ROUTE_METADATA_KEY, SERVED_ROUTES, type FunctionName, type ServedRoute } from '../shared/routes.ts';
import { KEY_SCHEMA } from '../shared/store/keys.ts';
import { functionBasics, functionEntry } from './functions.ts';

/** The only DynamoDB actions the API functions need (design/storage.md): reads by key, never Scan, never a write. */
export const TABLE_READ_ACTIONS = ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Query'] as const;

export const DEFAULT_THROTTLE = { rateLimit: 100, burstLimit: 200 } as const;
export const FUNCTION_LOG_RETENTION = RetentionDays.ONE_MONTH;
export const ACCESS_LOG_RETENTION = RetentionDays.THREE_MONTHS;
/** Namespace of the metric counted from the access log (HTTP APIs publish no throttle metric). */
export const METRICS_NAMESPACE = 'TeamResourcesApi';

/**
 * One JSON object per request. Only `$context` variables: no header, query string or body is
 * ever logged, so no token can reach the access log.
 */
export const ACCESS_LOG_FIELDS = {
  requestId: '$context.requestId',
  apiId: '$context.apiId',
  requestTime: '$context.requestTime',
  ip: '$context.identity.sourceIp',
  userAgent: '$context.identity.userAgent',
  httpMethod: '$context.httpMethod',
  path: '$context.path',
  routeKey: '$context.routeKey',
  protocol: '$context.protocol',
  status: '$context.status',
  responseLength: '$context.responseLength',
  responseLatency: '$context.responseLatency',
  integrationStatus: '$context.integrationStatus',
  integrationLatency: '$context.integrationLatency',
  integrationError: '$context.integrationErrorMessage',
  error: '$context.error.message',
} as const;

export interface TeamResourcesStackProps extends StackProps {
  /**
   * Serve an existing table (string `pk`/`sk`) instead of creating one. The stack then creates
   * no table, and the functions' permissions name this table's ARN.
   */
  readonly existingTableName?: string;
  /** PUBLIC_BASE_URL of the functions: the base of `links` and `meta.path`. Default: derived from each request. */
  readonly publicBaseUrl?: string;
  /** LOG_LEVEL of the functions (trace, debug, info, warn, error, critical, silent; any case). Default: INFO. */
  readonly logLevel?: string;
  /** Steady-state requests per second and burst of the default stage. */
  readonly throttle?: { readonly rateLimit: number; readonly burstLimit: number };
  /** A custom domain for the API, with an ACM certificate of the same region. */
  readonly customDomain?: { readonly domainName: string; readonly certificateArn: string };
  /** CORS preflight answered by API Gateway. Default: none (the API is for server-side clients). */
  readonly cors?: CorsPreflightOptions;
  /** An SNS topic every alarm notifies (on ALARM and on OK). Default: alarms without actions. */
  readonly alarmTopicArn?: string;
  /** Bundle the AWS SDK into each function (default) or use the runtime's copy. */
  readonly bundleAwsSdk?: boolean;
  /**
   * For `sam local start-api` only: declare an empty DYNAMODB_ENDPOINT on each function, because
   * SAM's --env-vars can only override variables the template declares. Never deploy it.
   */
  readonly samLocal?: boolean;
}

/**
 * The whole service: the table (or an existing one), one function per route of SERVED_ROUTES, the HTTP
 * API in front of them, and the alarms that say when it misbehaves.
 */
export class TeamResourcesStack extends Stack {
  readonly table: ITable;
  readonly api: HttpApi;
  readonly stage: HttpStage;
  readonly functions: Readonly<Record<FunctionName, NodejsFunction>>;
  readonly accessLogs: LogGroup;
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: TeamResourcesStackProps = {}) {
    super(scope, id, props);
    const throttle = checkedThrottle(props.throttle ?? DEFAULT_THROTTLE);
    if (props.publicBaseUrl !== undefined) {
      // The functions' own rule, so a bad URL fails the synth instead of every cold start.
      readApiConfig({ TABLE_NAME: 'check', PUBLIC_BASE_URL: props.publicBaseUrl });
    }

    this.table = props.existingTableName === undefined ? this.createTable() : importTable(this, props.existingTableName);

    const functions = {} as Record<FunctionName, NodejsFunction>;
    for (const route of SERVED_ROUTES) functions[route.name] = this.createFunction(route, props);
    this.functions = functions;

    this.accessLogs = new LogGroup(this, 'AccessLogs', { retention: ACCESS_LOG_RETENTION });
    this.api = new HttpApi(this, 'HttpApi', {
      description: 'Team Resources API: read-only finances, daemons and projects of a team',
      createDefaultStage: false,
      corsPreflight: props.cors,
    });
    for (const route of SERVED_ROUTES) {
      const httpRoutes = this.api.addRoutes({
        path: route.path,
        methods: [HttpMethod[route.method]],
        integration: new HttpLambdaIntegration(`${constructName(route.name)}Integration`, functions[route.name], {
          payloadFormatVersion: PayloadFormatVersion.VERSION_2_0,
        }),
      });
      for (const httpRoute of httpRoutes) {
        Validations.of(httpRoute).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason: readsTable(route)
            ? 'The function authenticates every request itself (bearer token checked against its stored SHA-256 hash), because the contract needs 401/403/404 bodies and check order an authorizer cannot produce.'
            : 'The OpenAPI document is public by design (client generators fetch it without a token); its function reads no data and has no table access.',
        });
      }
    }
    const domainName = props.customDomain && new DomainName(this, 'DomainName', {
      domainName: props.customDomain.domainName,
      certificate: Certificate.fromCertificateArn(this, 'Certificate', props.customDomain.certificateArn),
    });
    this.stage = new HttpStage(this, 'DefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle,
      accessLogSettings: {
        destination: new LogGroupLogDestination(this.accessLogs),
        format: AccessLogFormat.custom(JSON.stringify(ACCESS_LOG_FIELDS)),
      },
      domainMapping: domainName && { domainName },
    });

    this.createAlarms(throttle, props.alarmTopicArn);

    new CfnOutput(this, 'ApiUrl', { description: 'Base URL of the API', value: this.stage.url });
    new CfnOutput(this, 'TableName', { description: 'The table the functions read (TABLE_NAME for npm run import and token)', value: this.table.tableName });
    if (domainName) {
      new CfnOutput(this, 'CustomDomainTarget', { description: 'Point a CNAME (or alias) of the custom domain here', value: domainName.regionalDomainName });
    }
  }

  /** On-demand, point-in-time recovery, AWS-managed KMS key; kept when the stack goes. */
  private createTable(): Table {
    return new Table(this, 'Table', {
      partitionKey: { name: KEY_SCHEMA.partitionKey, type: AttributeType.STRING },
      sortKey: { name: KEY_SCHEMA.sortKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      encryption: TableEncryption.AWS_MANAGED,
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }

  /** A function with its own log group and its own role: its logs, and (data routes only) reads of the table by key. */
  private createFunction(route: ServedRoute, props: TeamResourcesStackProps): NodejsFunction {
    const name = constructName(route.name);
    const logGroup = new LogGroup(this, `${name}FunctionLogs`, { retention: FUNCTION_LOG_RETENTION });
    const role = new Role(this, `${name}FunctionRole`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `${route.method} ${route.path}: writes its own logs${readsTable(route) ? ', reads the table by key' : ''}`,
    });
    role.addToPolicy(new PolicyStatement({
      effect: Effect.ALLOW,
      actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
      resources: [logGroup.logGroupArn],
    }));
    if (readsTable(route)) {
      role.addToPolicy(new PolicyStatement({
        effect: Effect.ALLOW,
        actions: [...TABLE_READ_ACTIONS],
        resources: [this.table.tableArn],
      }));
    }

    const fn = new NodejsFunction(this, `${name}Function`, {
      ...functionBasics(functionEntry(route.name), props.bundleAwsSdk ?? true),
      description: `${route.method} ${route.path}`,
      role,
      logGroup,
      environment: {
        ...(readsTable(route) ? { TABLE_NAME: this.table.tableName } : {}),
        ...(props.publicBaseUrl === undefined ? {} : { PUBLIC_BASE_URL: props.publicBaseUrl }),
        ...(props.logLevel === undefined ? {} : { LOG_LEVEL: checkedLogLevel(props.logLevel) }),
        // Empty is unset for the functions (shared/config.ts); SAM users fill it with --env-vars.
        ...(props.samLocal ? { DYNAMODB_ENDPOINT: '' } : {}),
        // Stack traces of start-up failures (the runtime logs them) point into functions/ and shared/.
        NODE_OPTIONS: '--enable-source-maps',
      },
    });
    (fn.node.defaultChild as CfnFunction).addMetadata(ROUTE_METADATA_KEY, route.name);
    return fn;
  }

  /**
   * Alarms on what a caller would notice: server errors, slow answers, requests turned away by
   * throttling; and per function, failed and throttled invocations.
   */
  private createAlarms(throttle: { rateLimit: number; burstLimit: number }, alarmTopicArn: string | undefined) {
    const period = Duration.minutes(5);
    const requests = this.api.metricCount({ period, statistic: Stats.SUM });
    const serverErrors = this.api.metricServerError({ period, statistic: Stats.SUM });
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

    this.alarm('ApiLatencyP99Alarm', this.api.metricLatency({ period, statistic: Stats.p(99) }), {
      threshold: 2_000,
      evaluationPeriods: 3,
      datapointsToAlarm: 3,
      description: 'p99 latency of the API above 2 s for 15 minutes: DynamoDB calls are hitting their 1.5 s timeout and retrying (a cold start takes well under 2 s).',
    });

    // Throttled requests are answered 429 by API Gateway and counted with every other 4xx; the
    // functions never answer 429, so the access log's 429s are exactly the throttled requests.
    new MetricFilter(this, 'ThrottledRequestsFilter', {
      logGroup: this.accessLogs,
      filterPattern: FilterPattern.stringValue('$.status', '=', '429'),
      metricNamespace: METRICS_NAMESPACE,
      metricName: 'ThrottledRequests',
      metricValue: '1',
      dimensions: { ApiId: '$.apiId' },
    });
    const throttled = new Metric({
      namespace: METRICS_NAMESPACE,
      metricName: 'ThrottledRequests',
      dimensionsMap: { ApiId: this.api.apiId },
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
      const fn = this.functions[route.name];
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

    if (alarmTopicArn !== undefined) {
      const action = new SnsAction(Topic.fromTopicArn(this, 'AlarmTopic', alarmTopicArn));
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
    return alarm;
  }
}

/** `projects` -> `Projects`, the prefix of the route's construct ids. */
function constructName(name: FunctionName): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

const TABLE_NAME_PATTERN = /^[A-Za-z0-9_.-]{3,255}$/;

function importTable(scope: Construct, tableName: string): ITable {
  if (!TABLE_NAME_PATTERN.test(tableName)) throw new Error(`existing table name is not a DynamoDB table name: "${tableName}"`);
  return Table.fromTableName(scope, 'Table', tableName);
}

const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'];

/** Powertools' Logger reads LOG_LEVEL in capitals only; anything else it ignores silently. */
function checkedLogLevel(level: string): string {
  const upper = level.trim().toUpperCase();
  if (!LOG_LEVELS.includes(upper)) throw new Error(`log level must be one of ${LOG_LEVELS.join(', ')}, not "${level}"`);
  return upper;
}

function checkedThrottle(throttle: { rateLimit: number; burstLimit: number }) {
  const { rateLimit, burstLimit } = throttle;
  if (!(Number.isFinite(rateLimit) && rateLimit > 0)) throw new Error(`throttle rate limit must be a positive number of requests per second, not ${rateLimit}`);
  if (!(Number.isInteger(burstLimit) && burstLimit >= 1)) throw new Error(`throttle burst limit must be a positive integer, not ${burstLimit}`);
  return { rateLimit, burstLimit };
}
