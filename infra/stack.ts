import { CfnOutput, Duration, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  CorsHttpMethod,
  DomainName,
  HttpApi,
  HttpMethod,
  HttpStage,
  LogGroupLogDestination,
  type CorsPreflightOptions,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  LogQueryWidget,
  MathExpression,
  Metric,
  Stats,
  TreatMissingData,
  type IMetric,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { AttributeType, BillingMode, Operation, Table, TableEncryption, type ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { LoggingFormat, Tracing, type CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { FilterPattern, LogGroup, MetricFilter, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Construct, Node } from 'constructs';
import { readApiConfig } from '../shared/api/config.ts';
import { readLogLevel } from '../shared/api/log.ts';
import { OUTCOMES } from '../shared/api/http/middleware/access-log.ts';
import { METRICS_NAMESPACE } from '../shared/metrics.ts';
import { functionMemoryMb } from '../shared/api/function-settings.ts';
import { readsTable, ROUTE_METADATA_KEY, ROUTE_METHODS, ROUTES, SERVED_ROUTES, type FunctionName } from '../shared/api/routes.ts';
import { KEY_SCHEMA } from '../shared/table/keys.ts';
import { functionBasics, PROJECT_ROOT } from './functions.ts';
import { type SyncProps, syncAlarms, syncWidgets, TableSync } from './sync.ts';

/** The only DynamoDB actions the functions need (docs/storage.md): reads by key, never Scan, never a write. */
export const TABLE_READ_ACTIONS = ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Query'] as const;
export const DEFAULT_THROTTLE = { rateLimit: 100, burstLimit: 200 } as const;
/** The table operations the functions call. Metrics use CloudWatch's default period, 5 minutes, throughout. */
const READS = { operations: [Operation.BATCH_GET_ITEM, Operation.QUERY] };

/** API Gateway's access line: only `$context` variables, so no header, query or token is ever logged. */
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
  /** Serve this existing table (string `pk`/`sk`) instead of creating one. */
  existingTableName?: string;
  /** PUBLIC_BASE_URL of the functions: the base of `links` and `meta.path`. Default: derived from each request. */
  publicBaseUrl?: string;
  /** LOG_LEVEL of the functions (trace, debug, info, warn, error, critical, silent; any case). Default: INFO. */
  logLevel?: string;
  /** Steady-state requests per second and burst of the default stage. */
  throttle?: { rateLimit: number; burstLimit: number };
  /**
   * A custom domain for the API, with an ACM certificate of the same region, and the API mapping's
   * path (`v1`, or `orders/v1`; none: the domain's root). The functions' PUBLIC_BASE_URL is then
   * `https://<domain>[/<path>]` unless publicBaseUrl says otherwise.
   */
  customDomain?: { domainName: string; certificateArn: string; basePath?: string };
  /**
   * CORS answered by API Gateway (propsFromContext gives the API's). Default: none; the API is for
   * server-side clients.
   */
  cors?: CorsPreflightOptions;
  /** An SNS topic every alarm notifies, on ALARM and on OK. Default: alarms without actions. */
  alarmTopicArn?: string;
  /** Lambda active tracing (X-Ray) for the functions; no tracing SDK is bundled. Default: off. */
  tracing?: boolean;
  /**
   * For `sam local start-api` only: an empty DYNAMODB_ENDPOINT on each function for --env-vars to
   * fill. Never deploy it.
   */
  samLocal?: boolean;
  /**
   * The sync beside the API (infra/sync.ts; docs/deploy.md, "The sync"): the source's secret and
   * the VPC, subnets and security groups that reach it. Default: no sync.
   */
  sync?: SyncProps;
}

/**
 * The whole service: one DynamoDB table, one Lambda function per served route, the HTTP API in
 * front of them, and the alarms that say when it misbehaves.
 */
export class TeamResourcesStack extends Stack {
  table: ITable;
  api: HttpApi;
  readonly functions = {} as Record<FunctionName, NodejsFunction>;
  accessLogs: LogGroup;
  readonly alarms: Alarm[] = [];
  /** The deployed sync, when the stack has one. */
  sync?: TableSync;

  constructor(scope: Construct, id: string, props: TeamResourcesStackProps = {}) {
    super(scope, id, props);
    // Behind a custom domain the request cannot tell the links' base: AWS documents that payload
    // 2.0's rawPath leaves the API mapping's path out ("If you use an API mapping to connect your
    // stage to a custom domain name, rawPath won't provide the API mapping value": "Create AWS
    // Lambda proxy integrations for HTTP APIs",
    // https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html).
    const domain = props.customDomain;
    const publicBaseUrl =
      props.publicBaseUrl ?? (domain && `https://${domain.domainName}${domain.basePath ? `/${domain.basePath}` : ''}`);
    // The functions' own rules, so a bad value fails the synth instead of every cold start.
    if (publicBaseUrl !== undefined) readApiConfig({ TABLE_NAME: 'check', PUBLIC_BASE_URL: publicBaseUrl });
    const logLevel = props.logLevel === undefined ? undefined : readLogLevel({ LOG_LEVEL: props.logLevel.trim() });
    const { rateLimit, burstLimit } = props.throttle ?? DEFAULT_THROTTLE;
    if (!(Number.isFinite(rateLimit) && rateLimit > 0))
      throw new Error(`throttle rate limit must be a positive number, not ${rateLimit}`);
    if (!(Number.isInteger(burstLimit) && burstLimit >= 1))
      throw new Error(`throttle burst limit must be a positive integer, not ${burstLimit}`);

    // The table: on-demand, point-in-time recovery, deletion protection, kept when the stack goes.
    if (props.existingTableName === undefined) {
      this.table = new Table(this, 'Table', {
        partitionKey: { name: KEY_SCHEMA.partitionKey, type: AttributeType.STRING },
        sortKey: { name: KEY_SCHEMA.sortKey, type: AttributeType.STRING },
        billingMode: BillingMode.PAY_PER_REQUEST,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        deletionProtection: true,
        encryption: TableEncryption.AWS_MANAGED,
        removalPolicy: RemovalPolicy.RETAIN,
      });
    } else if (/^[A-Za-z0-9_.-]{3,255}$/.test(props.existingTableName)) {
      this.table = Table.fromTableName(this, 'Table', props.existingTableName);
    } else {
      throw new Error(`existing table name is not a DynamoDB table name: "${props.existingTableName}"`);
    }

    // The HTTP API: exactly the served routes, GET and HEAD each (any other path or method is
    // API Gateway's own 404), on one throttled $default stage with a JSON access line per request.
    this.accessLogs = new LogGroup(this, 'AccessLogs', { retention: RetentionDays.THREE_MONTHS });
    this.api = new HttpApi(this, 'HttpApi', {
      description: 'Team Resources API: read-only finances, daemons and projects of a team',
      createDefaultStage: false,
      corsPreflight: props.cors,
    });
    const domainName =
      domain &&
      new DomainName(this, 'DomainName', {
        domainName: domain.domainName,
        certificate: Certificate.fromCertificateArn(this, 'Certificate', domain.certificateArn),
      });
    const stage = new HttpStage(this, 'DefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit, burstLimit },
      accessLogSettings: {
        destination: new LogGroupLogDestination(this.accessLogs),
        format: AccessLogFormat.custom(JSON.stringify(ACCESS_LOG_FIELDS)),
      },
      domainMapping: domainName && { domainName, mappingKey: domain?.basePath },
    });

    // One function per route, each with its own log group and a role that may write those logs
    // and (data routes only) read the table by key.
    for (const route of SERVED_ROUTES) {
      const name = route.name[0]!.toUpperCase() + route.name.slice(1);
      const logGroup = new LogGroup(this, `${name}FunctionLogs`, { retention: RetentionDays.ONE_MONTH });
      const role = new Role(this, `${name}FunctionRole`, { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
      logGroup.grantWrite(role);
      if (readsTable(route)) this.table.grant(role, ...TABLE_READ_ACTIONS);
      // No NODE_OPTIONS=--enable-source-maps: Node would index the map at every cold start, for
      // stack traces only a start-up failure prints; the map ships beside the bundle (docs/deploy.md).
      const fn = new NodejsFunction(this, `${name}Function`, {
        ...functionBasics(`${PROJECT_ROOT}functions/${route.name}.ts`),
        memorySize: functionMemoryMb(route.name),
        description: `${route.method} ${route.path}`,
        role,
        logGroup,
        // Text, stated: Lambda forwards what shared/api/log.ts writes to stdout as it is, one JSON object
        // per line, which is what the embedded metric format needs (docs/operations.md).
        loggingFormat: LoggingFormat.TEXT,
        tracing: props.tracing ? Tracing.ACTIVE : undefined,
        environment: {
          ...(readsTable(route) ? { TABLE_NAME: this.table.tableName } : {}),
          ...(publicBaseUrl === undefined ? {} : { PUBLIC_BASE_URL: publicBaseUrl }),
          ...(logLevel === undefined ? {} : { LOG_LEVEL: logLevel }),
          ...(props.samLocal ? { DYNAMODB_ENDPOINT: '' } : {}),
        },
      });
      // X-Ray's PutTraceSegments takes no resource-level permission: its statement must name `*`.
      if (props.tracing)
        Validations.of(role).acknowledge({
          id: 'AwsSolutions-IAM5[Resource::*]',
          reason:
            "Active tracing: X-Ray's PutTraceSegments and PutTelemetryRecords support no resource-level permissions.",
        });
      // Tools find a route's bundle in the cloud assembly by this (commands/local/bundled-handlers.ts).
      (fn.node.defaultChild as CfnFunction).addMetadata(ROUTE_METADATA_KEY, route.name);
      this.functions[route.name] = fn;
      this.alarm(
        `${name}ErrorsAlarm`,
        fn.metricErrors(),
        1,
        1,
        1,
        `The ${route.name} function failed (start-up error, crash or timeout), which is a bug: see its log group.`,
      );
      this.alarm(
        `${name}ThrottlesAlarm`,
        fn.metricThrottles(),
        1,
        1,
        1,
        `Lambda throttled the ${route.name} function (callers get 500): see concurrent executions on the dashboard.`,
      );
      for (const httpRoute of this.api.addRoutes({
        path: route.path,
        methods: ROUTE_METHODS.map((method) => HttpMethod[method]),
        integration: new HttpLambdaIntegration(`${name}Integration`, fn),
      })) {
        Validations.of(httpRoute).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason: readsTable(route)
            ? 'The function checks the bearer token itself: ' +
              "the contract's 401/403/404 bodies and check order are beyond an authorizer."
            : 'The OpenAPI document is public by design: ' +
              'client generators fetch it without a token, and it reads no data.',
        });
      }
    }

    this.addApiAlarms();
    if (props.sync) {
      this.sync = new TableSync(this, 'Sync', { ...props.sync, table: this.table, logLevel });
      this.alarms.push(...syncAlarms(this.sync));
    }
    const dashboard = this.addDashboard();
    if (props.alarmTopicArn !== undefined) {
      const action = new SnsAction(Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn));
      for (const alarm of this.alarms) {
        alarm.addAlarmAction(action);
        alarm.addOkAction(action);
      }
    }

    new CfnOutput(this, 'ApiUrl', { description: 'Base URL of the API', value: stage.url });
    new CfnOutput(this, 'TableName', {
      description: 'TABLE_NAME for npm run import and npm run token',
      value: this.table.tableName,
    });
    const cloudWatchConsole = `https://${this.region}.console.aws.amazon.com/cloudwatch/home?region=${this.region}`;
    new CfnOutput(this, 'DashboardUrl', {
      description: 'The CloudWatch dashboard',
      value: `${cloudWatchConsole}#dashboards:name=${dashboard.dashboardName}`,
    });
    if (domainName)
      new CfnOutput(this, 'CustomDomainTarget', {
        description: "Where the custom domain's CNAME points",
        value: domainName.regionalDomainName,
      });
  }

  private alarm(
    id: string,
    metric: IMetric,
    threshold: number,
    evaluationPeriods: number,
    datapointsToAlarm: number,
    description: string,
  ) {
    this.alarms.push(
      new Alarm(this, id, {
        metric,
        threshold,
        evaluationPeriods,
        datapointsToAlarm,
        alarmDescription: description,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );
  }

  /** Alarms on what a caller of the API would notice, each saying where to look. */
  private addApiAlarms() {
    const serverErrorRate = this.percentOfRequests('errors', this.api.metricServerError());
    this.alarm(
      'Api5xxRateAlarm',
      serverErrorRate,
      5,
      3,
      2,
      'Over 5% of requests answered 5xx in 2 of 3 periods of 5 minutes: ' +
        '503s are DynamoDB failing or slow (see its alarms), 500s a bug (see the function logs).',
    );
    this.alarm(
      'ApiLatencyP99Alarm',
      this.api.metricLatency({ statistic: Stats.p(99) }),
      2_000,
      3,
      3,
      'p99 latency above 2 s for 15 minutes: ' +
        'DynamoDB calls are timing out and retrying (see DynamoDB latency on the dashboard).',
    );

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
    this.alarm(
      'ApiThrottledRequestsAlarm',
      this.accessMetric('ThrottledRequests', { ApiId: this.api.apiId }),
      10,
      1,
      1,
      '10 or more 429s in 5 minutes from the stage throttle or the account limit: ' +
        'raise it, or find the caller in the access log.',
    );

    this.alarm(
      'DynamoDBThrottlingAlarm',
      this.table.metricThrottledRequestsForOperations(READS),
      10,
      2,
      2,
      'DynamoDB throttled 10 or more reads in each of 10 minutes, answered 503: ' +
        "see consumed capacity on the dashboard, and whether one team's partition is hot.",
    );
    this.alarm(
      'DynamoDBSystemErrorsAlarm',
      this.table.metricSystemErrorsForOperations(READS),
      1,
      1,
      1,
      'DynamoDB failed reads with its own 500s, answered 503: ' +
        'check the AWS Health Dashboard for DynamoDB in this region.',
    );
    this.alarm(
      'Api401RiseAlarm',
      this.unauthenticated(),
      100,
      3,
      3,
      '100 or more 401s in each of 15 minutes: someone guessing tokens, or a client that lost its own; ' +
        'find them in the access log (status 401, ip).',
    );
  }

  /** A share of the API's requests; below 20 requests in 5 minutes none, as one answer is not a rate. */
  private percentOfRequests(id: string, part: IMetric) {
    const requests = this.api.metricCount({ statistic: Stats.SUM });
    return new MathExpression({
      expression: `IF(requests >= 20, 100 * ${id} / requests, 0)`,
      usingMetrics: { [id]: part, requests },
      label: `${id} %`,
    });
  }

  /**
   * A metric the API publishes itself: the access line's (shared/api/http/middleware/access-log.ts), or
   * the stack's count of 429s.
   */
  private accessMetric(name: string, dimensionsMap: Record<string, string>, statistic: string = Stats.SUM) {
    return new Metric({
      namespace: METRICS_NAMESPACE,
      metricName: name,
      dimensionsMap,
      statistic,
      label: `${name} ${Object.values(dimensionsMap).join(' ')}`,
    });
  }

  /** The 401s of every data route, summed. */
  private unauthenticated() {
    const byRoute = Object.fromEntries(
      ROUTES.map(({ name }) => [name, this.accessMetric('Requests', { route: name, outcome: '401' })]),
    );
    return new MathExpression({ expression: Object.keys(byRoute).join(' + '), usingMetrics: byRoute, label: '401s' });
  }

  /** What an on-call engineer asks first: which route fails how, how slow, cold starts, 401s and 429s, and DynamoDB. */
  private addDashboard(): Dashboard {
    const graph = (title: string, left: IMetric[]) => new GraphWidget({ title, left });
    const routes = SERVED_ROUTES.map((route) => route.name);
    const functions = Object.values(this.functions);
    return new Dashboard(this, 'Dashboard', {
      widgets: [
        routes.map((route) =>
          graph(
            `Requests by outcome: ${route}`,
            OUTCOMES.map((outcome) => this.accessMetric('Requests', { route, outcome })),
          ),
        ),
        ['p50', 'p90', 'p99'].map((p) =>
          graph(
            `Latency ${p} by route (ms)`,
            routes.map((route) => this.accessMetric('Latency', { route }, p)),
          ),
        ),
        [
          graph(
            'Cold starts by route',
            routes.map((route) => this.accessMetric('ColdStart', { route })),
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
            this.percentOfRequests('unauthenticated', this.unauthenticated()),
            this.percentOfRequests('throttled', this.accessMetric('ThrottledRequests', { ApiId: this.api.apiId })),
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
            this.api.metricClientError(),
            this.api.metricServerError(),
            this.api.metricIntegrationLatency({ statistic: Stats.p(99) }),
          ]),
        ],
        [
          graph('DynamoDB consumed read capacity and throttled reads', [
            this.table.metricConsumedReadCapacityUnits(),
            this.table.metricThrottledRequestsForOperations(READS),
          ]),
          graph('DynamoDB system errors', [this.table.metricSystemErrorsForOperations(READS)]),
          graph(
            'DynamoDB latency (ms)',
            READS.operations.map((operation) =>
              this.table.metricSuccessfulRequestLatency({
                dimensionsMap: { TableName: this.table.tableName, Operation: operation },
              }),
            ),
          ),
          graph(
            'DynamoDB per request (average)',
            ROUTES.flatMap(({ name: route }) =>
              ['DynamoDBRoundTrips', 'DynamoDBReadCapacity'].map((name) =>
                this.accessMetric(name, { route }, Stats.AVERAGE),
              ),
            ),
          ),
        ],
        ...(this.sync ? [syncWidgets(this.sync)] : []),
      ],
    });
  }
}

/**
 * Stack props from context values (`cdk deploy -c tableName=team-resources`, or cdk.json):
 * tableName, publicBaseUrl, logLevel, throttleRateLimit and throttleBurstLimit, domainName with
 * certificateArn (and domainBasePath, the API mapping's path), corsOrigins (comma-separated),
 * alarmTopicArn, tracing=true and samLocal=true; the sync's four (syncContext), with its two
 * optional ones.
 */
export function propsFromContext(node: Node): TeamResourcesStackProps {
  const text = (key: string): string | undefined => {
    const value = node.tryGetContext(key) as unknown;
    return value === undefined || value === null || value === '' ? undefined : String(value).trim();
  };
  // Not a number gives NaN, which the stack refuses with the other bad throttles.
  const number = (key: string, fallback: number): number => Number(text(key) ?? fallback);
  const domainName = text('domainName');
  const certificateArn = text('certificateArn');
  if ((domainName === undefined) !== (certificateArn === undefined))
    throw new Error('context values domainName and certificateArn go together');
  // The API mapping's path, without surrounding slashes: one or more segments of characters a URL
  // path carries unescaped, as API Gateway's mappings may have several levels ("Map API stages to
  // a custom domain name for HTTP APIs",
  // https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-mappings.html).
  const basePathGiven = text('domainBasePath');
  const basePath = basePathGiven?.replace(/^\/+|\/+$/g, '');
  if (basePathGiven !== undefined && domainName === undefined)
    throw new Error('context value domainBasePath needs domainName (and certificateArn)');
  if (basePath !== undefined && !/^[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/.test(basePath)) {
    throw new Error(
      'context value domainBasePath must be path segments of letters, digits, ".", "_", "~" and "-", ' +
        `such as v1, not "${basePathGiven}"`,
    );
  }
  const corsOrigins =
    text('corsOrigins')
      ?.split(',')
      .map((origin) => origin.trim())
      .filter(Boolean) ?? [];
  return {
    existingTableName: text('tableName'),
    publicBaseUrl: text('publicBaseUrl'),
    logLevel: text('logLevel'),
    throttle: {
      rateLimit: number('throttleRateLimit', DEFAULT_THROTTLE.rateLimit),
      burstLimit: number('throttleBurstLimit', DEFAULT_THROTTLE.burstLimit),
    },
    customDomain: domainName && certificateArn ? { domainName, certificateArn, basePath } : undefined,
    // GET and HEAD with the token and If-None-Match; scripts may read the headers they act on;
    // preflights cached for 2 hours (Chromium's cap).
    cors:
      corsOrigins.length === 0
        ? undefined
        : {
            allowOrigins: corsOrigins,
            allowMethods: ROUTE_METHODS.map((method) => CorsHttpMethod[method]),
            allowHeaders: ['authorization', 'accept', 'if-none-match'],
            exposeHeaders: ['etag', 'retry-after', 'www-authenticate'],
            maxAge: Duration.hours(2),
          },
    alarmTopicArn: text('alarmTopicArn'),
    tracing: text('tracing') === 'true',
    samLocal: text('samLocal') === 'true',
    sync: syncContext(text),
  };
}

/** The context keys that deploy the sync: all four, or none (docs/deploy.md). */
export const SYNC_CONTEXT_KEYS = ['syncSourceSecretArn', 'syncVpcId', 'syncSubnetIds', 'syncSecurityGroupIds'] as const;

/** The sync's settings from context values, when all four keys are given; some of them only is an error naming the rest. */
function syncContext(text: (key: string) => string | undefined): SyncProps | undefined {
  const given = SYNC_CONTEXT_KEYS.filter((key) => text(key) !== undefined);
  const optional = ['syncSecretKeyArn', 'syncTimezone'].filter((key) => text(key) !== undefined);
  if (given.length === 0) {
    if (optional.length > 0) throw new Error(`context value ${optional.join(' and ')} needs the sync's four keys`);
    return undefined;
  }
  const missing = SYNC_CONTEXT_KEYS.filter((key) => text(key) === undefined);
  if (missing.length > 0) {
    throw new Error(
      `the sync needs all four context values ${SYNC_CONTEXT_KEYS.join(', ')}: ${missing.join(', ')} ` +
        `${missing.length === 1 ? 'is' : 'are'} missing (or give none of them for no sync)`,
    );
  }
  const list = (key: string) =>
    text(key)!
      .split(',')
      .map((id) => id.trim())
      .filter(Boolean);
  return {
    sourceSecretArn: text('syncSourceSecretArn')!,
    vpcId: text('syncVpcId')!,
    subnetIds: list('syncSubnetIds'),
    securityGroupIds: list('syncSecurityGroupIds'),
    secretKeyArn: text('syncSecretKeyArn'),
    timezone: text('syncTimezone'),
  };
}
