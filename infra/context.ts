import type { Node } from 'constructs';
import { corsPreflight, DEFAULT_THROTTLE } from './http-api.ts';
import type { TeamResourcesStackProps } from './stack.ts';

/** The stack's name unless the `stackName` context value says otherwise. */
export const DEFAULT_STACK_NAME = 'TeamResourcesApi';

/**
 * Stack props from context values (`cdk deploy -c tableName=team-resources`, or cdk.json):
 *
 * - `tableName`: serve this existing table instead of creating one
 * - `publicBaseUrl`: PUBLIC_BASE_URL of the functions
 * - `logLevel`: LOG_LEVEL of the functions
 * - `throttleRateLimit`, `throttleBurstLimit`: the default stage's throttle
 * - `domainName` + `certificateArn`: a custom domain; `domainBasePath`: the API mapping's path on it
 * - `corsOrigins`: comma-separated origins allowed to call the API from a browser
 * - `alarmTopicArn`: an SNS topic for the alarms
 * - `samLocal=true`: a template for `sam local start-api` against DynamoDB Local (never deploy it)
 */
export function propsFromContext(node: Node): TeamResourcesStackProps {
  const text = (key: string): string | undefined => {
    const value = node.tryGetContext(key) as unknown;
    if (value === undefined || value === null || value === '') return undefined;
    return String(value).trim();
  };
  const number = (key: string, fallback: number): number => {
    const value = text(key);
    if (value === undefined) return fallback;
    const parsed = Number(value);
    if (!Number.isFinite(parsed)) throw new Error(`context value ${key} must be a number, not "${value}"`);
    return parsed;
  };

  const domainName = text('domainName');
  const certificateArn = text('certificateArn');
  if ((domainName === undefined) !== (certificateArn === undefined)) {
    throw new Error('context values domainName and certificateArn go together');
  }
  const basePath = domainBasePath(text('domainBasePath'), domainName);
  const corsOrigins = text('corsOrigins')?.split(',').map((origin) => origin.trim()).filter(Boolean);

  return {
    existingTableName: text('tableName'),
    publicBaseUrl: text('publicBaseUrl'),
    logLevel: text('logLevel'),
    throttle: {
      rateLimit: number('throttleRateLimit', DEFAULT_THROTTLE.rateLimit),
      burstLimit: number('throttleBurstLimit', DEFAULT_THROTTLE.burstLimit),
    },
    customDomain: domainName && certificateArn ? { domainName, certificateArn, basePath } : undefined,
    cors: corsOrigins && corsOrigins.length > 0 ? corsPreflight(corsOrigins) : undefined,
    alarmTopicArn: text('alarmTopicArn'),
    samLocal: text('samLocal') === 'true',
  };
}

/**
 * The API mapping's path (`-c domainBasePath=v1`), without surrounding slashes: one or more
 * segments of characters a URL path carries unescaped, as API Gateway's mappings may have several
 * levels ("Map API stages to a custom domain name for HTTP APIs",
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-mappings.html).
 */
function domainBasePath(value: string | undefined, domainName: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (domainName === undefined) throw new Error('context value domainBasePath needs domainName (and certificateArn)');
  const path = value.replace(/^\/+|\/+$/g, '');
  if (!/^[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/.test(path)) {
    throw new Error(`context value domainBasePath must be path segments of letters, digits, ".", "_", "~" and "-", such as v1, not "${value}"`);
  }
  return path;
}
