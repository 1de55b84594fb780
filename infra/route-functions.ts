import { type Stack, Validations } from 'aws-cdk-lib';
import { type HttpApi, HttpMethod } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { LoggingFormat, Tracing, type CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { functionMemoryMb } from '../shared/api/function-settings.ts';
import {
  readsTable,
  ROUTE_METADATA_KEY,
  ROUTE_METHODS,
  SERVED_ROUTES,
  type FunctionName,
} from '../shared/api/routes.ts';
import { functionBasics, PROJECT_ROOT } from './functions.ts';

/** The only DynamoDB actions the functions need (docs/storage.md): reads by key, never Scan, never a write. */
export const TABLE_READ_ACTIONS = ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Query'] as const;

interface RouteFunctionsProps {
  api: HttpApi;
  table: ITable;
  /**
   * What every function reads from its environment besides TABLE_NAME (data routes only):
   * STACK_NAME, PUBLIC_BASE_URL, LOG_LEVEL.
   */
  environment: Record<string, string>;
  tracing?: boolean;
}

/** A route's name as the functions' construct ids spell it: `Projects`. */
export const constructName = (name: FunctionName) => name[0]!.toUpperCase() + name.slice(1);

/**
 * One function per served route, each with its own log group and a role that may write those logs
 * and (data routes only) read the table by key, and the route's GET and HEAD on the HTTP API:
 * exactly the served routes (any other path or method is API Gateway's own 404).
 */
export function routeFunctions(stack: Stack, props: RouteFunctionsProps): Record<FunctionName, NodejsFunction> {
  const functions = {} as Record<FunctionName, NodejsFunction>;
  for (const route of SERVED_ROUTES) {
    const name = constructName(route.name);
    const logGroup = new LogGroup(stack, `${name}FunctionLogs`, { retention: RetentionDays.ONE_MONTH });
    const role = new Role(stack, `${name}FunctionRole`, { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    logGroup.grantWrite(role);
    if (readsTable(route)) props.table.grant(role, ...TABLE_READ_ACTIONS);
    // No NODE_OPTIONS=--enable-source-maps: Node would index the map at every cold start, for
    // stack traces only a start-up failure prints; the map ships beside the bundle (docs/deploy.md).
    const fn = new NodejsFunction(stack, `${name}Function`, {
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
        ...(readsTable(route) ? { TABLE_NAME: props.table.tableName } : {}),
        ...props.environment,
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
    functions[route.name] = fn;
    for (const httpRoute of props.api.addRoutes({
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
  return functions;
}
