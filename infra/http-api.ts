import type { Stack } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { HttpApi, HttpStage, LogGroupLogDestination, type CorsPreflightOptions } from 'aws-cdk-lib/aws-apigatewayv2';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { type CustomDomainProps, customDomainName } from './custom-domain.ts';
import { UsageError } from './usage-error.ts';

export const DEFAULT_THROTTLE = { rateLimit: 100, burstLimit: 200 } as const;

/**
 * API Gateway's access line: `$context` variables only (and the stack's name, below), so no header,
 * query or token is ever logged.
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
 * The access line's one field that is not a `$context` variable: the stack's name, written into the
 * format as a literal, for the 429 count's Stack dimension (api-alarms.ts).
 */
export const ACCESS_LOG_STACK_FIELD = 'stack';

interface HttpApiProps {
  throttle?: { rateLimit: number; burstLimit: number };
  cors?: CorsPreflightOptions;
  customDomain?: CustomDomainProps;
}

/**
 * The HTTP API, without its routes (route-functions.ts adds them): one throttled, auto-deployed
 * $default stage with a JSON access line per request, mapped to the custom domain when one is given.
 */
export function httpApi(stack: Stack, props: HttpApiProps) {
  const { rateLimit, burstLimit } = props.throttle ?? DEFAULT_THROTTLE;
  if (!(Number.isFinite(rateLimit) && rateLimit > 0))
    throw new UsageError(`throttle rate limit must be a positive number, not ${rateLimit}`);
  if (!(Number.isInteger(burstLimit) && burstLimit >= 1))
    throw new UsageError(`throttle burst limit must be a positive integer, not ${burstLimit}`);

  const accessLogs = new LogGroup(stack, 'AccessLogs', { retention: RetentionDays.THREE_MONTHS });
  const api = new HttpApi(stack, 'HttpApi', {
    description: 'Team Resources API: read-only finances, daemons and projects of a team',
    createDefaultStage: false,
    corsPreflight: props.cors,
  });
  const domain = props.customDomain;
  const domainName = domain && customDomainName(stack, domain);
  const stage = new HttpStage(stack, 'DefaultStage', {
    httpApi: api,
    stageName: '$default',
    autoDeploy: true,
    throttle: { rateLimit, burstLimit },
    accessLogSettings: {
      destination: new LogGroupLogDestination(accessLogs),
      format: AccessLogFormat.custom(
        JSON.stringify({ ...ACCESS_LOG_FIELDS, [ACCESS_LOG_STACK_FIELD]: stack.stackName }),
      ),
    },
    domainMapping: domainName && { domainName, mappingKey: domain?.basePath },
  });
  return { api, stage, accessLogs };
}
