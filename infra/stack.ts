import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { CorsPreflightOptions, HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { LogGroup } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { readApiConfig } from '../shared/api/config.ts';
import { readLogLevel } from '../shared/api/log.ts';
import type { FunctionName } from '../shared/api/routes.ts';
import { STACK_NAME_VARIABLE } from '../shared/metrics.ts';
import { apiAlarms } from './api-alarms.ts';
import { type CustomDomainProps, domainBaseUrl } from './custom-domain.ts';
import { dashboard } from './dashboard.ts';
import { httpApi } from './http-api.ts';
import { routeFunctions } from './route-functions.ts';
import { type SyncProps, TableSync } from './sync.ts';
import { syncAlarms, syncWidgets } from './sync-metrics.ts';
import { serviceTable } from './table.ts';
import { asUsage } from './usage-error.ts';

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
   * A custom domain for the API (custom-domain.ts). The functions' PUBLIC_BASE_URL is then
   * `https://<domain>[/<path>]` unless publicBaseUrl says otherwise.
   */
  customDomain?: CustomDomainProps;
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
 * The whole service: one DynamoDB table (table.ts), one Lambda function per served route
 * (route-functions.ts) behind the HTTP API (http-api.ts, custom-domain.ts), the alarms that say when
 * it misbehaves (api-alarms.ts) and the dashboard (dashboard.ts); optionally the sync beside it
 * (sync.ts, sync-metrics.ts). Each resource sits directly in the stack, so its logical id is its
 * construct id.
 */
export class TeamResourcesStack extends Stack {
  table: ITable;
  api: HttpApi;
  readonly functions: Record<FunctionName, NodejsFunction>;
  accessLogs: LogGroup;
  readonly alarms: Alarm[] = [];
  /** The deployed sync, when the stack has one. */
  sync?: TableSync;

  constructor(scope: Construct, id: string, props: TeamResourcesStackProps = {}) {
    super(scope, id, props);
    const domain = props.customDomain;
    const publicBaseUrl = props.publicBaseUrl ?? (domain && domainBaseUrl(domain));
    // The functions' own rules, so a bad value fails the synth instead of every cold start.
    if (publicBaseUrl !== undefined)
      asUsage(() => readApiConfig({ TABLE_NAME: 'check', PUBLIC_BASE_URL: publicBaseUrl }));
    const logLevel =
      props.logLevel === undefined ? undefined : asUsage(() => readLogLevel({ LOG_LEVEL: props.logLevel!.trim() }));

    this.table = serviceTable(this, props.existingTableName);
    const { api, stage, accessLogs } = httpApi(this, {
      throttle: props.throttle,
      cors: props.cors,
      customDomain: domain,
    });
    this.api = api;
    this.accessLogs = accessLogs;
    this.functions = routeFunctions(this, {
      api,
      table: this.table,
      tracing: props.tracing,
      environment: {
        // The Stack dimension of the access line's metrics (shared/api/config.ts, readStackName).
        [STACK_NAME_VARIABLE]: this.stackName,
        ...(publicBaseUrl === undefined ? {} : { PUBLIC_BASE_URL: publicBaseUrl }),
        ...(logLevel === undefined ? {} : { LOG_LEVEL: logLevel }),
        ...(props.samLocal ? { DYNAMODB_ENDPOINT: '' } : {}),
      },
    });
    const observed = { api, table: this.table, functions: this.functions };
    this.alarms.push(...apiAlarms(this, { ...observed, accessLogs }));
    if (props.sync) {
      this.sync = new TableSync(this, 'Sync', { ...props.sync, table: this.table, logLevel });
      this.alarms.push(...syncAlarms(this.sync));
    }
    const board = dashboard(this, { ...observed, more: this.sync ? syncWidgets(this.sync) : [] });
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
      value: `${cloudWatchConsole}#dashboards:name=${board.dashboardName}`,
    });
  }
}
