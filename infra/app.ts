import { App, Validations } from 'aws-cdk-lib';
import nag from 'cdk-nag';
import { propsFromContext, stackNameFromContext } from './context.ts';
import { TeamResourcesStack } from './stack.ts';
import { UsageError } from './usage-error.ts';

/**
 * The CDK app (cdk.json runs `node infra/app.ts`). Environment-agnostic: `cdk synth` needs no
 * AWS account, and `cdk deploy` uses the account and region of the current credentials.
 */
// Synthesized only once the stack is built: a context value it refuses leaves nothing to synthesize.
const app = new App({ autoSynth: false });
// The AwsSolutions checks run on every synth: a new finding fails `cdk synth` and `cdk deploy`.
Validations.of(app).addPlugins(new nag.AwsSolutionsChecks(app));

/**
 * The stack, or false when a context value is unusable: that is said in one line on stderr, without
 * a stack trace (the value's fault, not the code's), and the app exits 1, which the CDK CLI reports
 * as a failed synth.
 */
function stackBuilt(): boolean {
  try {
    new TeamResourcesStack(app, stackNameFromContext(app.node), {
      ...propsFromContext(app.node),
      description: 'Team Resources API: HTTP API, three Lambda functions, one DynamoDB table',
    });
    return true;
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    // One line, whatever the value held: control characters as escapes.
    const line = error.message.replace(
      /[\u0000-\u001f\u007f]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
    process.stderr.write(`${line}\n`);
    process.exitCode = 1;
    return false;
  }
}

if (stackBuilt()) app.synth();
