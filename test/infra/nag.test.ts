import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { App, Stack, Validations } from 'aws-cdk-lib';
import { HttpApi, HttpMethod } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpUrlIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import nag from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { propsFromContext } from '../../infra/context.ts';
import { TeamResourcesStack, type TeamResourcesStackProps } from '../../infra/stack.ts';
import { ROUTE_METHODS, SERVED_ROUTES } from '../../shared/api/routes.ts';
import { CDK_CONTEXT, SYNC_CONTEXT, synthStack, type Synthesized } from './support.ts';

/** Every prop set: the existing-table mode, a custom domain, CORS, an alarm topic, tracing. */
const EVERY_OPTION: TeamResourcesStackProps = {
  existingTableName: 'team-resources-prod',
  publicBaseUrl: 'https://api.example.com',
  logLevel: 'warn',
  throttle: { rateLimit: 20, burstLimit: 40 },
  customDomain: { domainName: 'api.example.com', certificateArn: 'arn:aws:acm:eu-west-1:123456789012:certificate/abc' },
  cors: { allowOrigins: ['https://app.example.com'] },
  alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:alarms',
  tracing: true,
};

/** The acknowledged rules of a construct tree: rule id -> reasons given. */
function acknowledgments(root: IConstruct): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const construct of root.node.findAll()) {
    for (const entry of construct.node.metadata) {
      if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
      for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) {
        const rule = id.replace(/^annotation::/i, '');
        found.set(rule, [...(found.get(rule) ?? []), reason]);
      }
    }
  }
  return found;
}

let plain: Synthesized;
let everything: Synthesized;
beforeAll(() => {
  plain = synthStack();
  everything = synthStack({ props: EVERY_OPTION });
});

describe('cdk-nag AwsSolutions', () => {
  it('finds nothing unacknowledged in the stack as deployed by default', () => {
    const report = new nag.AwsSolutionsChecks().validateScope(plain.stack);
    expect(report.violations).toEqual([]);
    expect(report.success).toBe(true);
  });

  it('finds nothing unacknowledged with an existing table and every option set', () => {
    expect(new nag.AwsSolutionsChecks().validateScope(everything.stack).violations).toEqual([]);
  });

  it('lets the synth through when registered on the app, as infra/app.ts does', () => {
    const app = new App({ context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
    Validations.of(app).addPlugins(new nag.AwsSolutionsChecks(app));
    new TeamResourcesStack(app, 'TeamResourcesApi', propsFromContext(app.node));
    const assembly = app.synth();
    try {
      const reportFile = join(assembly.directory, 'validation-report.json');
      if (existsSync(reportFile)) {
        const report = JSON.parse(readFileSync(reportFile, 'utf8')) as {
          pluginReports: Array<{ violations?: unknown[] }>;
        };
        expect(report.pluginReports.flatMap((r) => r.violations ?? [])).toEqual([]);
      }
    } finally {
      rmSync(assembly.directory, { recursive: true, force: true });
    }
  });

  it('is acknowledged for APIG4 only, on each route, GET and HEAD (the functions authenticate), and IAM5 with tracing on', () => {
    expect([...acknowledgments(plain.stack).keys()]).toEqual(['AwsSolutions-APIG4']);
    expect(acknowledgments(plain.stack).get('AwsSolutions-APIG4')).toHaveLength(
      SERVED_ROUTES.length * ROUTE_METHODS.length,
    );
    // With tracing on, also IAM5 on each function's role: X-Ray's actions take no resource-level permission.
    expect([...acknowledgments(everything.stack).keys()].sort()).toEqual([
      'AwsSolutions-APIG4',
      'AwsSolutions-IAM5[Resource::*]',
    ]);
  });

  it("is acknowledged, with the sync, for IAM5 on the sync's role only: the network interfaces Lambda makes in the VPC", () => {
    const { stack } = synthStack({ context: SYNC_CONTEXT, props: (app) => propsFromContext(app.node) });
    expect(new nag.AwsSolutionsChecks().validateScope(stack).violations).toEqual([]);
    const found = acknowledgments(stack.sync!);
    expect([...found.keys()].sort()).toEqual([
      'AwsSolutions-IAM5[Resource::*]',
      'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:*/*]',
    ]);
    for (const reasons of found.values()) for (const reason of reasons) expect(reason).not.toMatch(/\n/);
  });

  it('is given a one-line reason for every acknowledgment', () => {
    for (const reasons of acknowledgments(everything.stack).values()) {
      for (const reason of reasons) {
        expect(reason.length).toBeGreaterThan(40);
        expect(reason).not.toMatch(/\n/);
      }
    }
  });

  it('does flag a route without authorization when nothing acknowledges it (the check is live)', () => {
    const app = new App({ context: CDK_CONTEXT });
    const stack = new Stack(app, 'Bare');
    new HttpApi(stack, 'Api').addRoutes({
      path: '/x',
      methods: [HttpMethod.GET],
      integration: new HttpUrlIntegration('Url', 'https://example.com'),
    });
    const rules = new nag.AwsSolutionsChecks().validateScope(stack).violations.map((v) => v.ruleName);
    expect(rules).toContain('AwsSolutions-APIG4');
  });
});
