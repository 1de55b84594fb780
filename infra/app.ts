import { App, Validations } from 'aws-cdk-lib';
import nag from 'cdk-nag';
import { propsFromContext } from './context.ts';
import { TeamResourcesStack } from './stack.ts';

/**
 * The CDK app (cdk.json runs `node infra/app.ts`). Environment-agnostic: `cdk synth` needs no
 * AWS account, and `cdk deploy` uses the account and region of the current credentials.
 */
const app = new App();
// The AwsSolutions checks run on every synth: a new finding fails `cdk synth` and `cdk deploy`.
Validations.of(app).addPlugins(new nag.AwsSolutionsChecks(app));
new TeamResourcesStack(app, (app.node.tryGetContext('stackName') as string | undefined) ?? 'TeamResourcesApi', {
  ...propsFromContext(app.node),
  description: 'Team Resources API: HTTP API, three Lambda functions, one DynamoDB table',
});
app.synth();
