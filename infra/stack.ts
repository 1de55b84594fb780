import { CfnOutput, Stack, type CfnElement, type StackProps } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import type { CorsPreflightOptions, HttpApi, HttpStage } from 'aws-cdk-lib/aws-apigatewayv2';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { LogGroup } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { readApiConfig } from '../shared/config.ts';
import type { FunctionName } from '../shared/routes.ts';
import { ApiAlarms } from './alarms.ts';
import { ApiFunctions } from './api-functions.ts';
import { DEFAULT_THROTTLE, PublicApi } from './http-api.ts';
import { StackPart } from './stack-part.ts';
import { DataTable } from './table.ts';

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
  /**
   * A custom domain for the API, with an ACM certificate of the same region, and the API mapping's
   * path (`v1`, or `orders/v1`; none: the domain's root). The functions' PUBLIC_BASE_URL is then
   * `https://<domain>[/<path>]` unless publicBaseUrl says otherwise.
   */
  readonly customDomain?: { readonly domainName: string; readonly certificateArn: string; readonly basePath?: string };
  /** CORS answered by API Gateway; `corsPreflight(origins)` (http-api.ts) gives the API's settings. Default: none (the API is for server-side clients). */
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
 * The whole service, in four parts a reader can find: the table (table.ts), one function per
 * served route (api-functions.ts), the HTTP API in front of them (http-api.ts), and the alarms
 * that say when it misbehaves (alarms.ts).
 */
export class TeamResourcesStack extends Stack {
  readonly table: ITable;
  readonly api: HttpApi;
  readonly stage: HttpStage;
  readonly functions: Readonly<Record<FunctionName, NodejsFunction>>;
  readonly accessLogs: LogGroup;
  readonly alarms: Alarm[];

  constructor(scope: Construct, id: string, props: TeamResourcesStackProps = {}) {
    super(scope, id, props);
    props = { ...props, publicBaseUrl: props.publicBaseUrl ?? (props.customDomain && customDomainUrl(props.customDomain)) };
    if (props.publicBaseUrl !== undefined) {
      // The functions' own rule, so a bad URL fails the synth instead of every cold start.
      readApiConfig({ TABLE_NAME: 'check', PUBLIC_BASE_URL: props.publicBaseUrl });
    }
    const throttle = props.throttle ?? DEFAULT_THROTTLE;

    this.table = new DataTable(this, 'Data', { existingTableName: props.existingTableName }).table;
    this.functions = new ApiFunctions(this, 'Functions', { ...props, table: this.table }).byRoute;
    const http = new PublicApi(this, 'Http', { functions: this.functions, throttle, customDomain: props.customDomain, cors: props.cors });
    ({ api: this.api, stage: this.stage, accessLogs: this.accessLogs } = http);
    this.alarms = new ApiAlarms(this, 'Alarms', { api: this.api, accessLogs: this.accessLogs, functions: this.functions, throttle, alarmTopicArn: props.alarmTopicArn }).alarms;

    new CfnOutput(this, 'ApiUrl', { description: 'Base URL of the API', value: this.stage.url });
    new CfnOutput(this, 'TableName', { description: 'The table the functions read (TABLE_NAME for npm run import and token)', value: this.table.tableName });
    if (http.domainName) {
      new CfnOutput(this, 'CustomDomainTarget', { description: 'Point a CNAME (or alias) of the custom domain here', value: http.domainName.regionalDomainName });
    }
  }

  /**
   * Logical ids leave out the parts' own ids (stack-part.ts): resources keep the ids they had
   * before the stack was split into parts, so a deployed stack updates them in place.
   */
  protected override allocateLogicalId(element: CfnElement): string {
    const scopes = element.node.scopes.filter((scope) => !(scope instanceof StackPart));
    return super.allocateLogicalId({ node: { scopes }, stack: this } as unknown as CfnElement);
  }
}

/**
 * The base of the links behind a custom domain the stack maps. The request cannot tell it: AWS
 * documents that payload 2.0's rawPath leaves the API mapping's path out ("If you use an API
 * mapping to connect your stage to a custom domain name, rawPath won't provide the API mapping
 * value": "Create AWS Lambda proxy integrations for HTTP APIs",
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html).
 */
export function customDomainUrl(domain: { domainName: string; basePath?: string }): string {
  return `https://${domain.domainName}${domain.basePath ? `/${domain.basePath}` : ''}`;
}
