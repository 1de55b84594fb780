import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Match } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DOCUMENT_FUNCTION_MEMORY_MB,
  FUNCTION_MEMORY_MB,
  FUNCTION_TIMEOUT_MS,
} from '../../shared/api/function-settings.ts';
import { propsFromContext } from '../../infra/context.ts';
import { ACCESS_LOG_FIELDS, ACCESS_LOG_STACK_FIELD, DEFAULT_THROTTLE } from '../../infra/http-api.ts';
import { TABLE_READ_ACTIONS } from '../../infra/route-functions.ts';
import { METRICS_NAMESPACE, STACK_DIMENSION, STACK_NAME_VARIABLE } from '../../shared/metrics.ts';
import { findBundledFunctions } from '../../commands/local/bundled-handlers.ts';
import { ROUTE_METADATA_KEY } from '../../shared/api/routes.ts';
import { DOCUMENT_ROUTE, readsTable, ROUTE_METHODS, ROUTES, SERVED_ROUTES } from '../../shared/api/routes.ts';
import { KEY_SCHEMA } from '../../shared/table/keys.ts';
import { logicalId, resourcesOf, synthStack, type Synthesized } from './support.ts';

// The stack as `npm run synth` builds it, bundled once for the whole file.
let main: Synthesized;
let assemblyDir: string;
beforeAll(() => {
  main = synthStack({ bundle: true });
  assemblyDir = main.app.synth().directory;
});
afterAll(() => rmSync(assemblyDir, { recursive: true, force: true }));

const ROUTE_NAMES = SERVED_ROUTES.map((r) => r.name);
const dataFunction = (name: string) => ROUTES.some((r) => r.name === name);
const tableId = () => logicalId(main.stack, main.stack.table as never);
const functionId = (name: (typeof ROUTE_NAMES)[number]) => logicalId(main.stack, main.stack.functions[name]);
const functionsByRoute = () => {
  const byRoute: Record<string, { id: string; props: Record<string, any> }> = {};
  for (const [id, resource] of Object.entries(resourcesOf(main.template, 'AWS::Lambda::Function'))) {
    byRoute[resource.Metadata?.[ROUTE_METADATA_KEY] as string] = { id, props: resource.Properties };
  }
  return byRoute;
};
const allStatements = (template = main.template) =>
  Object.values(resourcesOf(template, 'AWS::IAM::Policy')).flatMap(
    (policy) =>
      policy.Properties.PolicyDocument.Statement as Array<{
        Action: string | string[];
        Resource: unknown;
        Effect: string;
      }>,
  );
const actionsOf = (statement: { Action: string | string[] }) => [statement.Action].flat();

describe('table', () => {
  it('has a string pk partition key and a string sk sort key, as commands/store/table.ts creates it locally', () => {
    main.template.resourceCountIs('AWS::DynamoDB::Table', 1);
    main.template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [
        { AttributeName: KEY_SCHEMA.partitionKey, KeyType: 'HASH' },
        { AttributeName: KEY_SCHEMA.sortKey, KeyType: 'RANGE' },
      ],
      AttributeDefinitions: Match.arrayEquals([
        { AttributeName: KEY_SCHEMA.partitionKey, AttributeType: 'S' },
        { AttributeName: KEY_SCHEMA.sortKey, AttributeType: 'S' },
      ]),
      GlobalSecondaryIndexes: Match.absent(),
    });
  });

  it('is billed on demand', () => {
    main.template.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      ProvisionedThroughput: Match.absent(),
    });
  });

  it('has point-in-time recovery and deletion protection on', () => {
    main.template.hasResourceProperties('AWS::DynamoDB::Table', {
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: true,
    });
  });

  it('is encrypted with the AWS-managed KMS key', () => {
    main.template.hasResourceProperties('AWS::DynamoDB::Table', {
      // SSEEnabled alone means KMS with the AWS-managed key (aws/dynamodb); no customer key.
      SSESpecification: Match.exact({ SSEEnabled: true }),
    });
  });

  it('is retained when the stack is deleted or the table replaced', () => {
    main.template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
  });
});

describe('functions', () => {
  it('are exactly one per served route: the data routes and the OpenAPI document', () => {
    main.template.resourceCountIs('AWS::Lambda::Function', SERVED_ROUTES.length);
    expect(Object.keys(functionsByRoute()).sort()).toEqual([...ROUTE_NAMES].sort());
  });

  it('run on nodejs24.x on arm64, loading index.handler', () => {
    for (const { props } of Object.values(functionsByRoute())) {
      expect(props.Runtime).toBe('nodejs24.x');
      expect(props.Architectures).toEqual(['arm64']);
      expect(props.Handler).toBe('index.handler');
    }
  });

  it('have the memory size chosen and the timeout the local server gives them', () => {
    for (const [route, { props }] of Object.entries(functionsByRoute())) {
      expect(props.MemorySize).toBe(dataFunction(route) ? FUNCTION_MEMORY_MB : DOCUMENT_FUNCTION_MEMORY_MB);
      expect(props.Timeout * 1000).toBe(FUNCTION_TIMEOUT_MS);
    }
  });

  it('give the OpenAPI document, a fixed text served without the AWS SDK, 128 MB and the data functions 512 MB', () => {
    const byRoute = functionsByRoute();
    expect(byRoute[DOCUMENT_ROUTE.name]!.props.MemorySize).toBe(128);
    for (const route of ROUTES) expect(byRoute[route.name]!.props.MemorySize).toBe(512);
  });

  it("read the table named by the stack and the stack's name (their metrics' Stack dimension) from their environment, nothing else", () => {
    for (const [route, { props }] of Object.entries(functionsByRoute())) {
      expect(props.Environment?.Variables ?? {}).toEqual({
        ...(dataFunction(route) ? { TABLE_NAME: { Ref: tableId() } } : {}),
        [STACK_NAME_VARIABLE]: 'TeamResourcesApi',
      });
    }
  });

  it('say which route they serve in their description', () => {
    const byRoute = functionsByRoute();
    for (const route of SERVED_ROUTES)
      expect(byRoute[route.name]!.props.Description).toBe(`${route.method} ${route.path}`);
  });

  it('log to their own log group, kept for 30 days', () => {
    const groups = resourcesOf(main.template, 'AWS::Logs::LogGroup');
    const targets = Object.values(functionsByRoute()).map(({ props }) => props.LoggingConfig.LogGroup.Ref as string);
    expect(new Set(targets).size).toBe(SERVED_ROUTES.length);
    for (const target of targets) expect(groups[target]!.Properties.RetentionInDays).toBe(30);
  });
});

describe('function bundles', () => {
  const bundles = () => findBundledFunctions(assemblyDir);

  it('are one ES module and its source map per function, nothing else', () => {
    for (const fn of Object.values(bundles())) {
      expect(fn.file.endsWith('index.mjs')).toBe(true);
      expect(readdirSync(fn.assetDir).sort()).toEqual(['index.mjs', 'index.mjs.map']);
    }
  });

  it('are minified ES modules exporting the handler, pointing at their source map', () => {
    for (const fn of Object.values(bundles())) {
      const code = readFileSync(fn.file, 'utf8');
      expect(code.length / code.split('\n').length).toBeGreaterThan(1_000);
      expect(code).toMatch(/export\s*\{[^}]*\bas handler\b[^}]*\}/);
      expect(code.trimEnd().endsWith('//# sourceMappingURL=index.mjs.map')).toBe(true);
    }
  });

  it('carry the AWS SDK and every other dependency inside: no package is imported at run time', () => {
    for (const fn of Object.values(bundles())) {
      const code = readFileSync(fn.file, 'utf8');
      const imported = [
        ...code.matchAll(/(?:^|[;}])\s*import\s*(?:[^"'();]*?\bfrom\s*)?["']([^"']+)["']/g),
        ...code.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g),
      ].map((m) => m[1]!);
      expect(imported.filter((specifier) => !specifier.startsWith('node:') && !/^[a-z_]+$/.test(specifier))).toEqual(
        [],
      );
      // The document's function reads no data, so it carries no DynamoDB client either.
      if (dataFunction(fn.route)) expect(code).toContain('BatchGetItem');
      else expect(code).not.toContain('BatchGetItem');
    }
  });

  it('need no require shim: no CommonJS require survives in the ES module', () => {
    for (const fn of Object.values(bundles())) {
      expect(readFileSync(fn.file, 'utf8')).not.toContain('Dynamic require of');
    }
  });

  it('map back to functions/ and shared/ without embedding the sources', () => {
    for (const fn of Object.values(bundles())) {
      const map = JSON.parse(readFileSync(`${fn.file}.map`, 'utf8')) as { sources: string[]; sourcesContent?: unknown };
      expect(map.sourcesContent).toBeUndefined();
      expect(map.sources.some((s) => s.endsWith(`functions/${fn.route}.ts`))).toBe(true);
      expect(map.sources.some((s) => s.includes('shared/api/http/handlers.ts'))).toBe(true);
    }
  });

  it('are the code of the function serving the same route', () => {
    const byRoute = functionsByRoute();
    for (const fn of Object.values(bundles())) expect(fn.logicalId).toBe(byRoute[fn.route]!.id);
    expect(existsSync(join(assemblyDir, 'TeamResourcesApi.template.json'))).toBe(true);
  });
});

describe('permissions', () => {
  it('give each function its own role, assumed by Lambda, with no managed policy', () => {
    const roles = resourcesOf(main.template, 'AWS::IAM::Role');
    expect(Object.keys(roles)).toHaveLength(SERVED_ROUTES.length);
    for (const { props } of Object.values(functionsByRoute())) {
      const role = roles[props.Role['Fn::GetAtt'][0]]!;
      expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
        { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' } },
      ]);
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
      expect(role.Properties.Policies).toBeUndefined();
    }
  });

  it('let each function write its own log group and read the table by key, exactly; the document function no table at all', () => {
    const policies = Object.values(resourcesOf(main.template, 'AWS::IAM::Policy'));
    expect(policies).toHaveLength(SERVED_ROUTES.length);
    for (const [route, { props }] of Object.entries(functionsByRoute())) {
      const roleId = props.Role['Fn::GetAtt'][0];
      const policy = policies.find((p) => p.Properties.Roles.some((r: { Ref: string }) => r.Ref === roleId))!;
      expect(policy.Properties.PolicyDocument.Statement).toEqual([
        {
          Effect: 'Allow',
          Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          Resource: { 'Fn::GetAtt': [props.LoggingConfig.LogGroup.Ref, 'Arn'] },
        },
        ...(dataFunction(route)
          ? [
              {
                Effect: 'Allow',
                Action: [...TABLE_READ_ACTIONS].sort(),
                Resource: { 'Fn::GetAtt': [tableId(), 'Arn'] },
              },
            ]
          : []),
      ]);
    }
    expect(readsTable(DOCUMENT_ROUTE)).toBe(false);
    expect([...TABLE_READ_ACTIONS].sort()).toEqual(['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Query']);
  });

  it('grant no Scan, no write and no wildcard anywhere', () => {
    const statements = allStatements();
    const actions = statements.flatMap(actionsOf);
    expect(
      actions
        .filter((a) => a.startsWith('dynamodb:'))
        .every((a) => (TABLE_READ_ACTIONS as readonly string[]).includes(a)),
    ).toBe(true);
    expect(
      actions.filter((a) => /^dynamodb:(Scan|Put|Update|Delete|BatchWrite|TransactWrite|PartiQL)|\*/.test(a)),
    ).toEqual([]);
    expect(statements.flatMap((s) => [s.Resource].flat()).filter((r) => typeof r === 'string')).toEqual([]);
    expect(statements.every((s) => s.Effect === 'Allow')).toBe(true);
  });

  it('let API Gateway invoke each function only through its own path (one permission per route and method, alike)', () => {
    const permissions = Object.values(resourcesOf(main.template, 'AWS::Lambda::Permission'));
    expect(permissions).toHaveLength(SERVED_ROUTES.length * ROUTE_METHODS.length);
    for (const route of SERVED_ROUTES) {
      const own = permissions.filter((p) => p.Properties.FunctionName['Fn::GetAtt']?.[0] === functionId(route.name));
      expect(own).toHaveLength(ROUTE_METHODS.length);
      for (const permission of own) {
        expect(permission.Properties.Action).toBe('lambda:InvokeFunction');
        expect(permission.Properties.Principal).toBe('apigateway.amazonaws.com');
        expect(JSON.stringify(permission.Properties.SourceArn)).toMatch(
          new RegExp(`/\\*/\\*${route.path.replace(/[{}.]/g, '\\$&')}"`),
        );
      }
    }
  });
});

describe('HTTP API', () => {
  it('is one HTTP API', () => {
    main.template.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
    main.template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP' });
  });

  it('has exactly the routes the local server serves: GET and HEAD on each path, no other method, no ANY', () => {
    const routeKeys = Object.values(resourcesOf(main.template, 'AWS::ApiGatewayV2::Route')).map(
      (r) => r.Properties.RouteKey,
    );
    expect(routeKeys.sort()).toEqual(SERVED_ROUTES.flatMap((r) => [`GET ${r.path}`, `HEAD ${r.path}`]).sort());
    expect(ROUTE_METHODS).toEqual(['GET', 'HEAD']);
  });

  it('sends each route, GET and HEAD alike, to its own function as a payload 2.0 proxy integration', () => {
    const integrations = resourcesOf(main.template, 'AWS::ApiGatewayV2::Integration');
    const routes = Object.values(resourcesOf(main.template, 'AWS::ApiGatewayV2::Route'));
    for (const route of SERVED_ROUTES) {
      for (const method of ROUTE_METHODS) {
        const target = routes.find((r) => r.Properties.RouteKey === `${method} ${route.path}`)!.Properties.Target;
        const integrationId = (target['Fn::Join'][1] as unknown[]).find((part) => typeof part === 'object') as {
          Ref: string;
        };
        expect(integrations[integrationId.Ref]!.Properties).toMatchObject({
          IntegrationType: 'AWS_PROXY',
          PayloadFormatVersion: '2.0',
          IntegrationUri: { 'Fn::GetAtt': [functionId(route.name), 'Arn'] },
        });
      }
    }
  });

  it('has no authorizer and no CORS unless asked for', () => {
    main.template.resourceCountIs('AWS::ApiGatewayV2::Authorizer', 0);
    main.template.hasResourceProperties('AWS::ApiGatewayV2::Api', { CorsConfiguration: Match.absent() });
  });

  it('serves everything on one auto-deployed $default stage, throttled by default', () => {
    main.template.resourceCountIs('AWS::ApiGatewayV2::Stage', 1);
    main.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: {
        ThrottlingRateLimit: DEFAULT_THROTTLE.rateLimit,
        ThrottlingBurstLimit: DEFAULT_THROTTLE.burstLimit,
      },
    });
  });

  it("writes one JSON access log line per request, of $context variables only and the stack's name, kept for 90 days", () => {
    const stage = Object.values(resourcesOf(main.template, 'AWS::ApiGatewayV2::Stage'))[0]!.Properties;
    const accessLogsId = logicalId(main.stack, main.stack.accessLogs);
    expect(stage.AccessLogSettings.DestinationArn).toEqual({ 'Fn::GetAtt': [accessLogsId, 'Arn'] });
    const { [ACCESS_LOG_STACK_FIELD]: stackName, ...format } = JSON.parse(stage.AccessLogSettings.Format) as Record<
      string,
      string
    >;
    expect(stackName).toBe('TeamResourcesApi');
    expect(format).toEqual(ACCESS_LOG_FIELDS);
    expect(format).toMatchObject({
      requestId: '$context.requestId',
      status: '$context.status',
      routeKey: '$context.routeKey',
      apiId: '$context.apiId',
    });
    expect(Object.values(format).every((v) => /^\$context\.[A-Za-z.]+$/.test(v))).toBe(true);
    expect(Object.values(format).some((v) => /header|querystring|authorizer/i.test(v))).toBe(false);
    expect(resourcesOf(main.template, 'AWS::Logs::LogGroup')[accessLogsId]!.Properties.RetentionInDays).toBe(90);
  });

  it("outputs the API URL, the table name and the dashboard's URL", () => {
    main.template.hasOutput('DashboardUrl', { Value: Match.objectLike({ 'Fn::Join': Match.anyValue() }) });
    main.template.hasOutput('ApiUrl', {
      Value: {
        'Fn::Join': [
          '',
          [
            'https://',
            { Ref: logicalId(main.stack, main.stack.api) },
            '.execute-api.',
            { Ref: 'AWS::Region' },
            '.',
            { Ref: 'AWS::URLSuffix' },
            '/',
          ],
        ],
      },
    });
    main.template.hasOutput('TableName', { Value: { Ref: tableId() } });
  });
});

describe('alarms', () => {
  const alarms = () => Object.values(resourcesOf(main.template, 'AWS::CloudWatch::Alarm')).map((a) => a.Properties);
  const apiRef = () => ({ Ref: logicalId(main.stack, main.stack.api) });

  it('are six for the API and DynamoDB, and two per function, each saying where to look', () => {
    expect(alarms()).toHaveLength(6 + 2 * SERVED_ROUTES.length);
    for (const alarm of alarms()) expect(alarm.AlarmDescription).toMatch(/: .*(see|check|find|raise)/i);
  });

  it('watch DynamoDB throttling and system errors on the operations the functions call', () => {
    for (const metric of ['ThrottledRequests', 'SystemErrors']) {
      const alarm = alarms().find((a) =>
        a.Metrics?.some(
          (m: any) => m.MetricStat?.Metric.Namespace === 'AWS/DynamoDB' && m.MetricStat.Metric.MetricName === metric,
        ),
      )!;
      const operations = alarm.Metrics.filter((m: any) => m.MetricStat).map(
        (m: any) => m.MetricStat.Metric.Dimensions.find((d: any) => d.Name === 'Operation').Value,
      );
      expect(operations.sort()).toEqual(['BatchGetItem', 'Query']);
    }
  });

  it("watch a sustained rise of 401s, from the access line's Requests of every data route", () => {
    const alarm = alarms().find((a) =>
      a.Metrics?.some((m: any) => m.MetricStat?.Metric.Dimensions?.some((d: any) => d.Value === '401')),
    )!;
    expect(alarm).toMatchObject({ Threshold: 100, EvaluationPeriods: 3, DatapointsToAlarm: 3 });
    expect(alarm.Metrics.filter((m: any) => m.MetricStat).map((m: any) => m.MetricStat.Metric.MetricName)).toEqual(
      ROUTES.map(() => 'Requests'),
    );
  });

  it('watch the share of 5xx responses, not single ones at low traffic', () => {
    const alarm = alarms().find((a) =>
      a.Metrics?.some((m: { Expression?: string }) => m.Expression?.includes('errors / requests')),
    )!;
    const byId = Object.fromEntries(alarm.Metrics.map((m: { Id: string }) => [m.Id, m]));
    expect(byId.expr_1 ?? alarm.Metrics.find((m: { Expression?: string }) => m.Expression)).toMatchObject({
      Expression: 'IF(requests >= 20, 100 * errors / requests, 0)',
    });
    expect(byId.errors.MetricStat).toMatchObject({
      Metric: { Namespace: 'AWS/ApiGateway', MetricName: '5xx', Dimensions: [{ Name: 'ApiId', Value: apiRef() }] },
      Stat: 'Sum',
      Period: 300,
    });
    expect(byId.requests.MetricStat).toMatchObject({
      Metric: { Namespace: 'AWS/ApiGateway', MetricName: 'Count', Dimensions: [{ Name: 'ApiId', Value: apiRef() }] },
      Stat: 'Sum',
      Period: 300,
    });
    expect(alarm).toMatchObject({
      Threshold: 5,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    });
  });

  it('watch the p99 latency of the API', () => {
    const alarm = alarms().find((a) => a.MetricName === 'Latency')!;
    expect(alarm).toMatchObject({
      Namespace: 'AWS/ApiGateway',
      Dimensions: [{ Name: 'ApiId', Value: apiRef() }],
      ExtendedStatistic: 'p99',
      Period: 300,
      Threshold: 2000,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
  });

  it('count the requests the stage throttled (429) from the access log, and alarm on them', () => {
    main.template.hasResourceProperties('AWS::Logs::MetricFilter', {
      LogGroupName: { Ref: logicalId(main.stack, main.stack.accessLogs) },
      FilterPattern: '{ $.status = "429" }',
      MetricTransformations: [
        {
          MetricNamespace: METRICS_NAMESPACE,
          MetricName: 'ThrottledRequests',
          MetricValue: '1',
          Dimensions: [
            { Key: STACK_DIMENSION, Value: `$.${ACCESS_LOG_STACK_FIELD}` },
            { Key: 'ApiId', Value: '$.apiId' },
          ],
        },
      ],
    });
    const alarm = alarms().find(
      (a) =>
        a.Metrics?.[0]?.MetricStat?.Metric.Namespace === METRICS_NAMESPACE &&
        a.Metrics[0].MetricStat.Metric.MetricName === 'ThrottledRequests',
    )!;
    expect(alarm.Metrics[0].MetricStat).toMatchObject({
      Metric: {
        Dimensions: [
          { Name: 'ApiId', Value: apiRef() },
          { Name: STACK_DIMENSION, Value: 'TeamResourcesApi' },
        ],
      },
      Stat: 'Sum',
      Period: 300,
    });
    expect(alarm.Threshold).toBe(10);
    expect(ACCESS_LOG_FIELDS.status).toBe('$context.status');
  });

  it('watch errors and throttles of every function', () => {
    for (const name of ROUTE_NAMES) {
      for (const metric of ['Errors', 'Throttles']) {
        const alarm = alarms().find(
          (a) => a.MetricName === metric && a.Dimensions?.[0]?.Value?.Ref === functionId(name),
        );
        expect(alarm, `${metric} alarm of ${name}`).toMatchObject({
          Namespace: 'AWS/Lambda',
          Dimensions: [{ Name: 'FunctionName', Value: { Ref: functionId(name) } }],
          Statistic: 'Sum',
          Period: 300,
          Threshold: 1,
          ComparisonOperator: 'GreaterThanOrEqualToThreshold',
          TreatMissingData: 'notBreaching',
        });
      }
    }
  });

  it('have no actions unless a topic is given', () => {
    for (const alarm of alarms()) expect(alarm.AlarmActions).toBeUndefined();
  });
});

describe('an existing table', () => {
  const EXISTING = 'team-resources-prod';
  let viaProps: Synthesized;
  let viaContext: Synthesized;
  beforeAll(() => {
    viaProps = synthStack({ props: { existingTableName: EXISTING } });
    viaContext = synthStack({ context: { tableName: EXISTING }, props: (app) => propsFromContext(app.node) });
  });
  const tableArn = {
    'Fn::Join': [
      '',
      [
        'arn:',
        { Ref: 'AWS::Partition' },
        ':dynamodb:',
        { Ref: 'AWS::Region' },
        ':',
        { Ref: 'AWS::AccountId' },
        `:table/${EXISTING}`,
      ],
    ],
  };

  for (const [how, synthesized] of [
    ['a stack prop', () => viaProps],
    ['the tableName context value', () => viaContext],
  ] as const) {
    describe(`named by ${how}`, () => {
      it('is not created', () => {
        synthesized().template.resourceCountIs('AWS::DynamoDB::Table', 0);
      });

      it('is what the functions read', () => {
        for (const fn of Object.values(resourcesOf(synthesized().template, 'AWS::Lambda::Function'))) {
          if (dataFunction(String(fn.Metadata?.[ROUTE_METADATA_KEY])))
            expect(fn.Properties.Environment.Variables.TABLE_NAME).toBe(EXISTING);
          else expect(fn.Properties.Environment?.Variables?.TABLE_NAME).toBeUndefined();
        }
        synthesized().template.hasOutput('TableName', { Value: EXISTING });
      });

      it('is the only resource of the DynamoDB permissions, with the same read-only actions', () => {
        const dynamo = allStatements(synthesized().template).filter((s) =>
          actionsOf(s).some((a) => a.startsWith('dynamodb:')),
        );
        expect(dynamo).toHaveLength(ROUTES.length);
        for (const statement of dynamo) {
          expect(statement.Resource).toEqual(tableArn);
          expect(actionsOf(statement)).toEqual([...TABLE_READ_ACTIONS].sort());
        }
      });
    });
  }

  it('must be a DynamoDB table name', () => {
    expect(() => synthStack({ props: { existingTableName: 'no spaces allowed' } })).toThrow(
      /not a DynamoDB table name/,
    );
  });
});

describe('options', () => {
  it('set the stage throttle from props or context values', () => {
    synthStack({ props: { throttle: { rateLimit: 25, burstLimit: 50 } } }).template.hasResourceProperties(
      'AWS::ApiGatewayV2::Stage',
      {
        DefaultRouteSettings: { ThrottlingRateLimit: 25, ThrottlingBurstLimit: 50 },
      },
    );
    synthStack({
      context: { throttleRateLimit: '7', throttleBurstLimit: '9' },
      props: (app) => propsFromContext(app.node),
    }).template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      DefaultRouteSettings: { ThrottlingRateLimit: 7, ThrottlingBurstLimit: 9 },
    });
  });

  it('refuse a throttle that is not positive', () => {
    expect(() => synthStack({ props: { throttle: { rateLimit: 0, burstLimit: 10 } } })).toThrow(/rate limit/);
    expect(() => synthStack({ props: { throttle: { rateLimit: 10, burstLimit: 2.5 } } })).toThrow(/burst limit/);
  });

  it('pass PUBLIC_BASE_URL and LOG_LEVEL to every function', () => {
    const { template } = synthStack({ props: { publicBaseUrl: 'https://api.example.com', logLevel: 'warn' } });
    for (const fn of Object.values(resourcesOf(template, 'AWS::Lambda::Function'))) {
      expect(fn.Properties.Environment.Variables).toMatchObject({
        PUBLIC_BASE_URL: 'https://api.example.com',
        LOG_LEVEL: 'WARN',
      });
    }
  });

  it("refuse a log level the functions' logger would ignore", () => {
    expect(() => synthStack({ props: { logLevel: 'verbose' } })).toThrow(/LOG_LEVEL must be one of/);
  });

  it('refuse a PUBLIC_BASE_URL the functions would refuse at start-up', () => {
    expect(() => synthStack({ props: { publicBaseUrl: 'api.example.com' } })).toThrow(
      /PUBLIC_BASE_URL is not an http\(s\) URL/,
    );
  });

  it('declare an empty DYNAMODB_ENDPOINT for sam local only when asked to', () => {
    const { template } = synthStack({ context: { samLocal: 'true' }, props: (app) => propsFromContext(app.node) });
    for (const fn of Object.values(resourcesOf(template, 'AWS::Lambda::Function'))) {
      expect(fn.Properties.Environment.Variables.DYNAMODB_ENDPOINT).toBe('');
    }
  });

  it('map a custom domain to the $default stage and output its DNS target', () => {
    const { template } = synthStack({
      props: {
        customDomain: {
          domainName: 'api.example.com',
          certificateArn: 'arn:aws:acm:eu-west-1:123456789012:certificate/abc',
        },
      },
    });
    template.hasResourceProperties('AWS::ApiGatewayV2::DomainName', {
      DomainName: 'api.example.com',
      DomainNameConfigurations: [
        Match.objectLike({
          CertificateArn: 'arn:aws:acm:eu-west-1:123456789012:certificate/abc',
          EndpointType: 'REGIONAL',
        }),
      ],
    });
    template.hasResourceProperties('AWS::ApiGatewayV2::ApiMapping', { Stage: Match.anyValue() });
    template.hasOutput('CustomDomainTarget', {});
  });

  it('answer CORS preflights for the origins given: GET and HEAD, the token and If-None-Match, for 2 hours', () => {
    const { template } = synthStack({
      context: { corsOrigins: 'https://a.example, https://b.example' },
      props: (app) => propsFromContext(app.node),
    });
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', {
      CorsConfiguration: Match.objectLike({
        AllowOrigins: ['https://a.example', 'https://b.example'],
        AllowMethods: ['GET', 'HEAD'],
        AllowHeaders: ['authorization', 'accept', 'if-none-match'],
        MaxAge: 7200,
      }),
    });
  });

  it('let a browser script read the ETag, Retry-After and WWW-Authenticate the API sends, and nothing else (no credentials mode)', () => {
    const { template } = synthStack({
      context: { corsOrigins: 'https://a.example' },
      props: (app) => propsFromContext(app.node),
    });
    const cors = Object.values(resourcesOf(template, 'AWS::ApiGatewayV2::Api'))[0]!.Properties.CorsConfiguration;
    expect(cors.ExposeHeaders).toEqual(['etag', 'retry-after', 'www-authenticate']);
    expect(cors.AllowCredentials).toBeUndefined();
  });

  it('notify an SNS topic from every alarm, on alarm and on recovery', () => {
    const topic = 'arn:aws:sns:eu-west-1:123456789012:team-resources-alarms';
    const { template } = synthStack({ props: { alarmTopicArn: topic } });
    const alarms = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm'));
    expect(alarms).toHaveLength(6 + 2 * SERVED_ROUTES.length);
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([topic]);
      expect(alarm.Properties.OKActions).toEqual([topic]);
    }
  });
});
