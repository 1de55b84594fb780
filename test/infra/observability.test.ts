import { describe, expect, it } from 'vitest';
import { ACCESS_LINE_METRICS, OUTCOMES } from '../../shared/api/http/middleware/access-log.ts';
import { METRICS_NAMESPACE, STACK_DIMENSION } from '../../shared/metrics.ts';
import { ROUTES, SERVED_ROUTES } from '../../shared/api/routes.ts';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { propsFromContext } from '../../infra/context.ts';
import { TeamResourcesStack } from '../../infra/stack.ts';
import { SYNC_METRICS } from '../../shared/sync/metrics.ts';
import { CDK_CONTEXT, resourcesOf, SYNC_CONTEXT, synthStack } from './support.ts';

/**
 * What operators see: the dashboard and the metrics its widgets and the alarms name, the log
 * format the functions write in, and tracing. Every metric named must be one something emits:
 * the access line (shared/api/http/middleware/access-log.ts, with the dimensions it is published
 * with), the sync's lines (shared/sync/metrics.ts, SYNC_METRICS, with the Stack dimension), the
 * stack's own count of 429s, or a metric AWS documents for its namespace. Each of the stack's own
 * carries the stack's name, so that two stacks in one account share none.
 */
const DOCUMENTED: Record<string, string[]> = {
  // https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html
  'AWS/Lambda': ['Invocations', 'Errors', 'Throttles', 'Duration', 'ConcurrentExecutions'],
  // https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/metrics-dimensions.html
  'AWS/DynamoDB': [
    'ConsumedReadCapacityUnits',
    'ThrottledRequests',
    'ReadThrottleEvents',
    'SuccessfulRequestLatency',
    'SystemErrors',
  ],
  // https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-metrics.html
  'AWS/ApiGateway': ['Count', '4xx', '5xx', 'Latency', 'IntegrationLatency', 'DataProcessed'],
};

/** The metric of the access line or the stack by name, with the dimension names it carries. */
const EMITTED = new Map<string, string[]>([
  ...ACCESS_LINE_METRICS.flatMap(({ dimensions, metrics }) =>
    metrics.map((metric) => [metric.Name, [...dimensions].sort()] as [string, string[]]),
  ),
  ['ThrottledRequests', ['ApiId', STACK_DIMENSION]],
  ...SYNC_METRICS.map(({ Name }) => [Name, [STACK_DIMENSION]] as [string, string[]]),
]);

/** Why a metric as CloudWatch's dashboard JSON or an alarm names it is not one that is emitted; undefined when it is. */
function notEmitted(namespace: string, name: string, dimensionNames: string[]): string | undefined {
  if (namespace === METRICS_NAMESPACE) {
    const expected = EMITTED.get(name);
    if (!expected) return `${name} is not a metric of the access line or the sync`;
    if (JSON.stringify([...dimensionNames].sort()) !== JSON.stringify(expected))
      return `${name} is published with ${expected}, not ${dimensionNames}`;
    return undefined;
  }
  return DOCUMENTED[namespace]?.includes(name) ? undefined : `${namespace} ${name} is not a documented metric`;
}

const { template } = synthStack({ props: { tracing: true } });
const plain = synthStack().template;
/** The stack with the sync (its four context keys), whose widgets and alarms are checked alike. */
const synced = synthStack({ context: SYNC_CONTEXT, props: (app) => propsFromContext(app.node) }).template;

/** The dashboard's widgets, its tokens (references to the stack's resources) as TOKEN. */
function widgets(
  from = template,
): { type: string; properties: { title: string; metrics?: unknown[][]; query?: string } }[] {
  const body = Object.values(resourcesOf(from, 'AWS::CloudWatch::Dashboard'))[0]!.Properties.DashboardBody;
  return JSON.parse(
    (body['Fn::Join'][1] as unknown[]).map((part) => (typeof part === 'string' ? part : 'TOKEN')).join(''),
  ).widgets;
}

/** [namespace, name, dimension names] of every metric a dashboard widget names (math expressions aside). */
function widgetMetrics(widget: ReturnType<typeof widgets>[number]): [string, string, string[]][] {
  return (widget.properties.metrics ?? [])
    .filter((entry) => typeof entry[0] === 'string')
    .map((entry) => {
      const [namespace, name, ...rest] = entry.filter((part) => typeof part === 'string') as string[];
      return [namespace!, name!, rest.filter((_, i) => i % 2 === 0)];
    });
}

describe('the dashboard', () => {
  it('is one, with its URL as a stack output', () => {
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    expect(JSON.stringify(template.toJSON().Outputs.DashboardUrl.Value)).toContain('#dashboards:name=');
  });

  it("names only metrics that are emitted: the access line's with their dimensions, the sync's, the stack's 429 count, or AWS's documented ones", () => {
    for (const from of [template, synced]) {
      const problems = widgets(from).flatMap((widget) =>
        widgetMetrics(widget)
          .map(([namespace, name, dims]) => notEmitted(namespace, name, dims))
          .filter(Boolean),
      );
      expect(problems).toEqual([]);
      expect(widgets(from).flatMap(widgetMetrics).length).toBeGreaterThan(50);
    }
  });

  it("shows every metric the sync emits, with the sync's four keys", () => {
    const named = widgets(synced)
      .flatMap(widgetMetrics)
      .filter(([namespace]) => namespace === METRICS_NAMESPACE)
      .map(([, name]) => name);
    expect(named).toEqual(expect.arrayContaining(SYNC_METRICS.map(({ Name }) => Name)));
    expect(
      widgets()
        .flatMap(widgetMetrics)
        .some(([, name]) => name.startsWith('Sync')),
    ).toBe(false);
  });

  it('shows requests by outcome for every route, latency p50/p90/p99 by route, and cold starts with their init duration', () => {
    const titles = widgets().map((widget) => widget.properties.title);
    for (const route of SERVED_ROUTES) {
      const widget = widgets().find((w) => w.properties.title === `Requests by outcome: ${route.name}`)!;
      expect(widgetMetrics(widget).map(([, name]) => name)).toEqual(OUTCOMES.map(() => 'Requests'));
    }
    for (const p of ['p50', 'p90', 'p99']) {
      const widget = widgets().find((w) => w.properties.title.startsWith(`Latency ${p}`))!;
      expect(widget.properties.metrics!.map((entry) => (entry.at(-1) as { stat: string }).stat)).toEqual(
        SERVED_ROUTES.map(() => p),
      );
    }
    expect(titles).toEqual(
      expect.arrayContaining(['Cold starts by route', 'Cold starts and init duration', '401 and 429 (% of requests)']),
    );
    const initDuration = widgets().find((w) => w.type === 'log')!;
    expect(initDuration.properties.query).toContain('@initDuration');
    expect(initDuration.properties.query!.match(/SOURCE/g)).toHaveLength(SERVED_ROUTES.length);
  });

  it("shows Lambda's errors, throttles and concurrency, DynamoDB's capacity, throttling, errors and latency, and API Gateway's 4xx, 5xx and integration latency", () => {
    const named = new Set(
      widgets()
        .flatMap(widgetMetrics)
        .map(([namespace, name]) => `${namespace} ${name}`),
    );
    for (const metric of [
      'AWS/Lambda Errors',
      'AWS/Lambda Throttles',
      'AWS/Lambda ConcurrentExecutions',
      'AWS/DynamoDB ConsumedReadCapacityUnits',
      'AWS/DynamoDB ThrottledRequests',
      'AWS/DynamoDB SystemErrors',
      'AWS/DynamoDB SuccessfulRequestLatency',
      'AWS/ApiGateway 4xx',
      'AWS/ApiGateway 5xx',
      'AWS/ApiGateway IntegrationLatency',
      `${METRICS_NAMESPACE} DynamoDBRoundTrips`,
      `${METRICS_NAMESPACE} DynamoDBReadCapacity`,
    ]) {
      expect(named, metric).toContain(metric);
    }
  });
});

describe('the alarms', () => {
  it('name only metrics that are emitted, with the sync and without', () => {
    const alarms = [template, synced].flatMap((from) => Object.values(resourcesOf(from, 'AWS::CloudWatch::Alarm')));
    expect(alarms.some(({ Properties: alarm }) => JSON.stringify(alarm).includes('SyncLag'))).toBe(true);
    const problems = alarms.flatMap(({ Properties: alarm }) => {
      const stats = alarm.Metrics
        ? alarm.Metrics.filter((m: any) => m.MetricStat).map((m: any) => m.MetricStat.Metric)
        : [alarm];
      return stats
        .map((m: any) =>
          notEmitted(
            m.Namespace,
            m.MetricName,
            (m.Dimensions ?? []).map((d: { Name: string }) => d.Name),
          ),
        )
        .filter(Boolean);
    });
    expect(problems).toEqual([]);
  });
});

describe('two stacks in one account', () => {
  /** Every metric of the stacks' own namespace that an alarm or a widget names: [name, its dimensions]. */
  function ownMetrics(template: Template): [string, Record<string, unknown>][] {
    const fromAlarms = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm')).flatMap(({ Properties: a }) =>
      (a.Metrics ?? [{ MetricStat: { Metric: a } }])
        .filter((m: any) => m.MetricStat?.Metric.Namespace === METRICS_NAMESPACE)
        .map(({ MetricStat: { Metric: m } }: any) => [
          m.MetricName,
          Object.fromEntries((m.Dimensions ?? []).map((d: any) => [d.Name, d.Value])),
        ]),
    );
    const fromWidgets = widgets(template)
      .flatMap((widget) => widget.properties.metrics ?? [])
      .filter((entry) => entry[0] === METRICS_NAMESPACE)
      .map((entry) => {
        const [, name, ...rest] = entry.filter((part) => typeof part === 'string') as string[];
        return [name!, Object.fromEntries(rest.flatMap((_, i) => (i % 2 === 0 ? [[rest[i], rest[i + 1]]] : [])))];
      });
    return [...fromAlarms, ...fromWidgets] as [string, Record<string, unknown>][];
  }

  it("never share a metric: every one of their own that an alarm or the dashboard names carries the stack's name", () => {
    const app = new App({ context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [], ...SYNC_CONTEXT } });
    const stacks = ['TeamResourcesStaging', 'TeamResourcesProduction'].map(
      (name) => new TeamResourcesStack(app, name, propsFromContext(app.node)),
    );
    const [staging, production] = stacks.map((stack) => Template.fromStack(stack));
    const named = { staging: ownMetrics(staging!), production: ownMetrics(production!) };
    expect(named.staging.length).toBeGreaterThan(50);
    for (const [stack, metrics] of [
      ['TeamResourcesStaging', named.staging],
      ['TeamResourcesProduction', named.production],
    ] as const) {
      for (const [name, dimensions] of metrics) expect(dimensions[STACK_DIMENSION], name).toBe(stack);
    }
    const key = ([name, dimensions]: [string, Record<string, unknown>]) => JSON.stringify([name, dimensions]);
    const production_ = new Set(named.production.map(key));
    expect(named.staging.map(key).filter((k) => production_.has(k))).toEqual([]);
  });
});

describe("the functions' logs and traces", () => {
  it("are written in Lambda's Text log format, which passes the access line to CloudWatch Logs as it is", () => {
    for (const fn of Object.values(resourcesOf(plain, 'AWS::Lambda::Function')))
      expect(fn.Properties.LoggingConfig.LogFormat).toBe('Text');
  });

  it("are not traced unless tracing=true, which turns on Lambda's active tracing for every function", () => {
    for (const fn of Object.values(resourcesOf(plain, 'AWS::Lambda::Function')))
      expect(fn.Properties.TracingConfig).toBeUndefined();
    const traced = Object.values(resourcesOf(template, 'AWS::Lambda::Function'));
    expect(traced).toHaveLength(SERVED_ROUTES.length);
    for (const fn of traced) expect(fn.Properties.TracingConfig).toEqual({ Mode: 'Active' });
    expect(ROUTES.length).toBe(3);
  });
});
