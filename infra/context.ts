import { Duration } from 'aws-cdk-lib';
import { CorsHttpMethod } from 'aws-cdk-lib/aws-apigatewayv2';
import type { Node } from 'constructs';
import { ROUTE_METHODS } from '../shared/api/routes.ts';
import { DEFAULT_THROTTLE } from './http-api.ts';
import type { TeamResourcesStackProps } from './stack.ts';
import type { SyncProps } from './sync.ts';
import { UsageError } from './usage-error.ts';

// What each value must look like, so a wrong one fails the synth naming its key, rather than the
// deploy (or, for an ARN, CDK's own parse with a stack trace).
const DOMAIN_NAME = /^(\*\.)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;
const CERTIFICATE_ARN = /^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate\/[A-Za-z0-9-]+$/;
const TOPIC_ARN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_.-]{1,256}$/;
const ORIGIN = /^(\*|https?:\/\/(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?)$/;
/** CloudFormation's rule for a stack name. */
const STACK_NAME = /^[A-Za-z][A-Za-z0-9-]{0,127}$/;

/** The stack's name: context value stackName, or TeamResourcesApi. */
export function stackNameFromContext(node: Node): string {
  const given = node.tryGetContext('stackName') as unknown;
  if (given === undefined || given === null || given === '') return 'TeamResourcesApi';
  const name = String(given).trim();
  if (!STACK_NAME.test(name))
    throw new UsageError(
      'context value stackName must be a CloudFormation stack name (a letter, then letters, digits and "-"), ' +
        `not "${name}"`,
    );
  return name;
}

/**
 * Stack props from context values (`cdk deploy -c tableName=team-resources`, or cdk.json):
 * tableName, publicBaseUrl, logLevel, throttleRateLimit and throttleBurstLimit, domainName with
 * certificateArn (and domainBasePath, the API mapping's path), corsOrigins (comma-separated),
 * alarmTopicArn, tracing=true and samLocal=true; the sync's four (syncContext), with its three
 * optional ones.
 */
export function propsFromContext(node: Node): TeamResourcesStackProps {
  const text = (key: string): string | undefined => {
    const value = node.tryGetContext(key) as unknown;
    return value === undefined || value === null || value === '' ? undefined : String(value).trim();
  };
  // A number, which the stack then checks with the throttle given as props.
  const number = (key: string, fallback: number): number => {
    const value = text(key);
    if (value !== undefined && !/^\d+(\.\d+)?$/.test(value))
      throw new UsageError(`context value ${key} must be a number, not "${value}"`);
    return Number(value ?? fallback);
  };
  const domainName = text('domainName');
  const certificateArn = text('certificateArn');
  if ((domainName === undefined) !== (certificateArn === undefined))
    throw new UsageError('context values domainName and certificateArn go together');
  // The API mapping's path, without surrounding slashes: one or more segments of characters a URL
  // path carries unescaped, as API Gateway's mappings may have several levels ("Map API stages to
  // a custom domain name for HTTP APIs",
  // https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-mappings.html).
  const basePathGiven = text('domainBasePath');
  const basePath = basePathGiven?.replace(/^\/+|\/+$/g, '');
  if (basePathGiven !== undefined && domainName === undefined)
    throw new UsageError('context value domainBasePath needs domainName (and certificateArn)');
  if (basePath !== undefined && !/^[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/.test(basePath)) {
    throw new UsageError(
      'context value domainBasePath must be path segments of letters, digits, ".", "_", "~" and "-", ' +
        `such as v1, not "${basePathGiven}"`,
    );
  }
  if (domainName !== undefined && !DOMAIN_NAME.test(domainName))
    throw new UsageError(`context value domainName must be a domain name such as api.example.com, not "${domainName}"`);
  if (certificateArn !== undefined && !CERTIFICATE_ARN.test(certificateArn))
    throw new UsageError(`context value certificateArn is not an ACM certificate ARN: "${certificateArn}"`);
  const corsOrigins =
    text('corsOrigins')
      ?.split(',')
      .map((origin) => origin.trim())
      .filter(Boolean) ?? [];
  const notOrigin = corsOrigins.find((origin) => !ORIGIN.test(origin));
  if (notOrigin !== undefined)
    throw new UsageError(
      `context value corsOrigins must be origins such as https://app.example.com, comma-separated, not "${notOrigin}"`,
    );
  const alarmTopicArn = text('alarmTopicArn');
  if (alarmTopicArn !== undefined && !TOPIC_ARN.test(alarmTopicArn))
    throw new UsageError(`context value alarmTopicArn is not an SNS topic ARN: "${alarmTopicArn}"`);
  const flag = (key: string): boolean => {
    const value = text(key);
    if (value !== undefined && value !== 'true' && value !== 'false')
      throw new UsageError(`context value ${key} must be true or false, not "${value}"`);
    return value === 'true';
  };
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
    alarmTopicArn,
    tracing: flag('tracing'),
    samLocal: flag('samLocal'),
    sync: syncContext(text),
  };
}

/** The context keys that deploy the sync: all four, or none (docs/deploy.md). */
export const SYNC_CONTEXT_KEYS = ['syncSourceSecretArn', 'syncVpcId', 'syncSubnetIds', 'syncSecurityGroupIds'] as const;

/** The sync's optional context keys, each only with the four. */
const SYNC_OPTIONAL_KEYS = ['syncSecretKeyArn', 'syncTimezone', 'syncMapping'] as const;

/**
 * The sync's settings from context values, when all four keys are given; some of them only is an
 * error naming the rest.
 */
function syncContext(text: (key: string) => string | undefined): SyncProps | undefined {
  const given = SYNC_CONTEXT_KEYS.filter((key) => text(key) !== undefined);
  const optional = SYNC_OPTIONAL_KEYS.filter((key) => text(key) !== undefined);
  if (given.length === 0) {
    if (optional.length > 0) throw new UsageError(`context value ${optional.join(' and ')} needs the sync's four keys`);
    return undefined;
  }
  const missing = SYNC_CONTEXT_KEYS.filter((key) => text(key) === undefined);
  if (missing.length > 0) {
    throw new UsageError(
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
    mappingFile: text('syncMapping'),
  };
}
