import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Effect, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { readsTable, ROUTE_METADATA_KEY, SERVED_ROUTES, type FunctionName, type ServedRoute } from '../shared/routes.ts';
import { functionMemoryMb } from '../shared/function-settings.ts';
import { functionBasics, functionEntry } from './functions.ts';
import { StackPart } from './stack-part.ts';

/** The only DynamoDB actions the API functions need (docs/storage.md): reads by key, never Scan, never a write. */
export const TABLE_READ_ACTIONS = ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Query'] as const;
const FUNCTION_LOG_RETENTION = RetentionDays.ONE_MONTH;

const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'];

export interface ApiFunctionsProps {
  table: ITable;
  publicBaseUrl?: string;
  logLevel?: string;
  bundleAwsSdk?: boolean;
  samLocal?: boolean;
}

/**
 * One Lambda function per served route, each with its own log group and its own role: it may
 * write its logs and (data routes only) read the table by key. Each function carries its route in
 * its template metadata, so tools can find its bundle in the cloud assembly.
 */
export class ApiFunctions extends StackPart {
  readonly byRoute: Readonly<Record<FunctionName, NodejsFunction>>;

  constructor(scope: Construct, id: string, props: ApiFunctionsProps) {
    super(scope, id);
    const byRoute = {} as Record<FunctionName, NodejsFunction>;
    for (const route of SERVED_ROUTES) byRoute[route.name] = this.createFunction(route, props);
    this.byRoute = byRoute;
  }

  private createFunction(route: ServedRoute, props: ApiFunctionsProps): NodejsFunction {
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
        resources: [props.table.tableArn],
      }));
    }

    // No NODE_OPTIONS=--enable-source-maps: Node would read and index the 600 KB map at every cold
    // start (bench part 3 measures it each run), for stack traces that only a start-up failure
    // prints (a request logs its error's name and message, never a stack). The map still ships
    // beside the bundle and can be applied to a logged position offline (README "Stack traces").
    const fn = new NodejsFunction(this, `${name}Function`, {
      ...functionBasics(functionEntry(route.name), props.bundleAwsSdk ?? true),
      memorySize: functionMemoryMb(route.name),
      description: `${route.method} ${route.path}`,
      role,
      logGroup,
      environment: {
        ...(readsTable(route) ? { TABLE_NAME: props.table.tableName } : {}),
        ...(props.publicBaseUrl === undefined ? {} : { PUBLIC_BASE_URL: props.publicBaseUrl }),
        ...(props.logLevel === undefined ? {} : { LOG_LEVEL: checkedLogLevel(props.logLevel) }),
        // Empty is unset for the functions (shared/config.ts); SAM users fill it with --env-vars.
        ...(props.samLocal ? { DYNAMODB_ENDPOINT: '' } : {}),
      },
    });
    (fn.node.defaultChild as CfnFunction).addMetadata(ROUTE_METADATA_KEY, route.name);
    return fn;
  }
}

/** `projects` -> `Projects`, the prefix of the route's construct ids. */
export function constructName(name: FunctionName): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

/** Powertools' Logger reads LOG_LEVEL in capitals only; anything else it ignores silently. */
function checkedLogLevel(level: string): string {
  const upper = level.trim().toUpperCase();
  if (!LOG_LEVELS.includes(upper)) throw new Error(`log level must be one of ${LOG_LEVELS.join(', ')}, not "${level}"`);
  return upper;
}
