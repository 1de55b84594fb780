import { Duration, Stack, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  CorsHttpMethod,
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
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { readsTable, ROUTE_METHODS, SERVED_ROUTES, type FunctionName } from '../shared/routes.ts';
import { constructName } from './api-functions.ts';
import { StackPart } from './stack-part.ts';

export const DEFAULT_THROTTLE = { rateLimit: 100, burstLimit: 200 } as const;
const ACCESS_LOG_RETENTION = RetentionDays.THREE_MONTHS;

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

/**
 * CORS for browser clients of the given origins, answered by API Gateway: GET and HEAD with the
 * bearer token and a conditional GET's If-None-Match; a script may read the headers the API sends
 * for it to act on (the ETag to send back, Retry-After on a 503, WWW-Authenticate on a 401).
 * Preflights are cached for 2 hours (Chromium's cap; longer values gain nothing there).
 */
export function corsPreflight(allowOrigins: string[]): CorsPreflightOptions {
  return {
    allowOrigins,
    allowMethods: ROUTE_METHODS.map((method) => CorsHttpMethod[method]),
    allowHeaders: ['authorization', 'accept', 'if-none-match'],
    exposeHeaders: ['etag', 'retry-after', 'www-authenticate'],
    maxAge: Duration.hours(2),
  };
}

export interface PublicApiProps {
  functions: Readonly<Record<FunctionName, NodejsFunction>>;
  throttle: { rateLimit: number; burstLimit: number };
  customDomain?: { domainName: string; certificateArn: string; basePath?: string };
  cors?: CorsPreflightOptions;
}

/**
 * The HTTP API in front of the functions: exactly the routes of SERVED_ROUTES, each for GET and
 * HEAD (ROUTE_METHODS; payload 2.0; any other path or method is API Gateway's own 404), one
 * throttled `$default` stage with a JSON access-log line per request, and optionally a custom
 * domain mapped to it.
 */
export class PublicApi extends StackPart {
  readonly api: HttpApi;
  readonly stage: HttpStage;
  readonly accessLogs: LogGroup;
  readonly domainName?: DomainName;

  constructor(scope: Construct, id: string, props: PublicApiProps) {
    super(scope, id);
    this.accessLogs = new LogGroup(this, 'AccessLogs', { retention: ACCESS_LOG_RETENTION });
    this.api = new HttpApi(this, 'HttpApi', {
      description: 'Team Resources API: read-only finances, daemons and projects of a team',
      createDefaultStage: false,
      corsPreflight: props.cors,
    });
    for (const route of SERVED_ROUTES) {
      const httpRoutes = this.api.addRoutes({
        path: route.path,
        methods: ROUTE_METHODS.map((method) => HttpMethod[method]),
        integration: new HttpLambdaIntegration(`${constructName(route.name)}Integration`, props.functions[route.name], {
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
    // The domain is created at the stack's top level: the API mapping's id is built from the
    // domain's construct path, and a new id would replace the deployed mapping (stack-part.ts).
    const top = Stack.of(this);
    this.domainName = props.customDomain && new DomainName(top, 'DomainName', {
      domainName: props.customDomain.domainName,
      certificate: Certificate.fromCertificateArn(top, 'Certificate', props.customDomain.certificateArn),
    });
    this.stage = new HttpStage(this, 'DefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle: checkedThrottle(props.throttle),
      accessLogSettings: {
        destination: new LogGroupLogDestination(this.accessLogs),
        format: AccessLogFormat.custom(JSON.stringify(ACCESS_LOG_FIELDS)),
      },
      domainMapping: this.domainName && { domainName: this.domainName, mappingKey: props.customDomain?.basePath },
    });
  }
}

function checkedThrottle(throttle: { rateLimit: number; burstLimit: number }) {
  const { rateLimit, burstLimit } = throttle;
  if (!(Number.isFinite(rateLimit) && rateLimit > 0)) throw new Error(`throttle rate limit must be a positive number of requests per second, not ${rateLimit}`);
  if (!(Number.isInteger(burstLimit) && burstLimit >= 1)) throw new Error(`throttle burst limit must be a positive integer, not ${burstLimit}`);
  return { rateLimit, burstLimit };
}
