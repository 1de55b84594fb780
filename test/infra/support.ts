import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { PROJECT_ROOT } from '../../infra/functions.ts';
import { TeamResourcesStack, type TeamResourcesStackProps } from '../../infra/stack.ts';

/** The context `cdk synth` runs with (cdk.json's feature flags), so tests see the same template. */
export const CDK_CONTEXT = (
  JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> }
).context;

export interface Synthesized {
  app: App;
  stack: TeamResourcesStack;
  template: Template;
}

/**
 * Builds the stack in a fresh app and synthesizes it. Bundling (a few seconds of esbuild) runs
 * only when asked for: a test file that looks at the code bundles once, the others skip it.
 */
export function synthStack(
  options: {
    props?: TeamResourcesStackProps | ((app: App) => TeamResourcesStackProps);
    context?: Record<string, unknown>;
    bundle?: boolean;
    outdir?: string;
  } = {},
): Synthesized {
  const app = new App({
    outdir: options.outdir,
    context: { ...CDK_CONTEXT, ...(options.bundle ? {} : { 'aws:cdk:bundling-stacks': [] }), ...options.context },
  });
  const props = typeof options.props === 'function' ? options.props(app) : options.props;
  const stack = new TeamResourcesStack(app, 'TeamResourcesApi', props);
  return { app, stack, template: Template.fromStack(stack) };
}

type Resources = Record<
  string,
  {
    Type: string;
    Properties: Record<string, any>;
    Metadata?: Record<string, unknown>;
    DeletionPolicy?: string;
    UpdateReplacePolicy?: string;
  }
>;

/** The template's resources of one type, by logical id. */
export function resourcesOf(template: Template, type: string): Resources {
  return template.findResources(type) as Resources;
}

/** The logical id of a construct's CloudFormation resource. */
export function logicalId(stack: TeamResourcesStack, construct: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(construct.node.defaultChild as never);
}

/** The sync's four context keys, as `cdk deploy -c …` gives them (docs/deploy.md). */
export const SYNC_CONTEXT = {
  syncSourceSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:laravel-db-AbCdEf',
  syncVpcId: 'vpc-0123456789abcdef0',
  syncSubnetIds: 'subnet-0123456789abcdef0, subnet-0fedcba9876543210',
  syncSecurityGroupIds: 'sg-0123456789abcdef0',
};
