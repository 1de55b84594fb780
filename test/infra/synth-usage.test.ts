import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { afterAll, describe, expect, it } from 'vitest';
import { propsFromContext, stackNameFromContext } from '../../infra/context.ts';
import { TeamResourcesStack } from '../../infra/stack.ts';
import { UsageError } from '../../infra/usage-error.ts';
import { NODE, ROOT } from '../support/import-process.ts';
import { CDK_CONTEXT, SYNC_CONTEXT } from './support.ts';

/**
 * A context value the stack cannot use is the user's to fix, not a bug: `npm run synth` (and
 * `cdk deploy`) says so in one line on stderr and exits non-zero, without a Node stack trace
 * (infra/app.ts prints a UsageError's message alone, infra/usage-error.ts). A few cases run the app
 * as the CDK CLI runs it, a process of its own given its context in CDK_CONTEXT_JSON; the rest check,
 * in this process, that each problem is a UsageError.
 */
const outdir = mkdtempSync(join(tmpdir(), 'team-resources-synth-usage-'));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: ROOT, env, timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error.code as number | undefined) ?? null) : 0, stdout, stderr }),
    );
  });
}

/** The app entry with these context values (and cdk.json's), without bundling: what `cdk synth` runs. */
const app = (context: Record<string, string>) =>
  run(NODE, ['infra/app.ts'], {
    PATH: process.env.PATH,
    CDK_OUTDIR: outdir,
    CDK_CONTEXT_JSON: JSON.stringify({ ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [], ...context }),
  });

/** A line of a Node stack trace, or of the source excerpt Node prints above an uncaught error. */
const STACK_FRAME = /^\s+at |^file:\/\/|node:internal|triggerUncaughtException|^\s*\^+\s*$/m;

// Processes on a machine shared with other work: generous time, one after another.
describe('npm run synth, as a process', { timeout: 180_000 }, () => {
  it('with a partial set of the sync keys prints which are missing in one line and exits non-zero, without a stack trace', async () => {
    const { syncVpcId, syncSubnetIds } = SYNC_CONTEXT;
    // As `npm run synth -- -c …` runs it: the CDK CLI, with the project's node first on the PATH.
    const cli = await run(
      join(ROOT, 'node_modules/.bin/cdk'),
      ['synth', '--quiet', '--no-notices', '-c', `syncVpcId=${syncVpcId}`, '-c', `syncSubnetIds=${syncSubnetIds}`],
      { PATH: [join(ROOT, 'node_modules/.bin'), process.env.PATH].join(delimiter), CDK_OUTDIR: outdir },
    );
    expect(cli.code).not.toBe(0);
    expect(cli.stderr).not.toMatch(STACK_FRAME);
    const message =
      'the sync needs all four context values syncSourceSecretArn, syncVpcId, syncSubnetIds, syncSecurityGroupIds: ' +
      'syncSourceSecretArn, syncSecurityGroupIds are missing (or give none of them for no sync)';
    expect(cli.stderr.split('\n')).toContain(message);
    // The app itself says that line and nothing else.
    expect(await app({ syncVpcId, syncSubnetIds })).toEqual({ code: 1, stdout: '', stderr: `${message}\n` });
  });

  it.each([
    [
      'a mapping file that is no mapping',
      { ...SYNC_CONTEXT, syncMapping: 'package.json' },
      'syncMapping: the mapping package.json is not usable: unknown key "name" (use "queries" and "watch")',
    ],
    [
      'a value holding a line break, which stays one line',
      { ...SYNC_CONTEXT, syncVpcId: 'vpc-1\nvpc-2' },
      'syncVpcId is not a VPC id: "vpc-1\\u000avpc-2"',
    ],
  ])('fails on %s, in one line without a stack trace', async (_, context, message) => {
    expect(await app(context)).toEqual({ code: 1, stdout: '', stderr: `${message}\n` });
  });

  it('synthesizes with all four keys, saying nothing', async () => {
    expect(await app(SYNC_CONTEXT)).toMatchObject({ code: 0, stderr: '' });
  });
});

describe('any context value the stack cannot use', () => {
  /** The stack built as infra/app.ts builds it. */
  const build = (context: Record<string, string>) => {
    const cdkApp = new App({ context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [], ...context } });
    return new TeamResourcesStack(cdkApp, stackNameFromContext(cdkApp.node), propsFromContext(cdkApp.node));
  };
  const { syncSourceSecretArn: _, ...threeKeys } = SYNC_CONTEXT;

  it.each([
    ['three of the sync keys', threeKeys, /syncSourceSecretArn is missing/],
    ['an optional sync key alone', { syncTimezone: 'Europe/Berlin' }, /needs the sync's four keys/],
    ['a VPC id that is none', { ...SYNC_CONTEXT, syncVpcId: 'my-vpc' }, /syncVpcId is not a VPC id/],
    ['a zone the runtime does not know', { ...SYNC_CONTEXT, syncTimezone: 'Mars/Base' }, /syncTimezone/],
    ['a mapping file that is not there', { ...SYNC_CONTEXT, syncMapping: 'none.json' }, /none\.json cannot be read/],
    ['a domain without its certificate', { domainName: 'api.example.com' }, /go together/],
    ['a domain name that is none', { domainName: 'api example', certificateArn: 'x' }, /domainName must be/],
    ['an alarm topic that is no ARN', { alarmTopicArn: 'alarms' }, /alarmTopicArn is not an SNS topic ARN/],
    ['an origin that is none', { corsOrigins: 'https://a.example, a.example' }, /corsOrigins must be origins/],
    ['a throttle that is no number', { throttleRateLimit: 'fast' }, /throttleRateLimit must be a number/],
    ['a throttle of nothing', { throttleRateLimit: '0' }, /rate limit must be a positive number/],
    ['a log level the functions ignore', { logLevel: 'verbose' }, /LOG_LEVEL must be one of/],
    ['a base URL the functions refuse', { publicBaseUrl: 'api.example.com' }, /PUBLIC_BASE_URL is not an http/],
    ['a table name DynamoDB refuses', { tableName: 'a' }, /not a DynamoDB table name/],
    ['a stack name CloudFormation refuses', { stackName: 'team api' }, /stackName must be a CloudFormation/],
    ['a flag that is neither true nor false', { tracing: 'yes' }, /tracing must be true or false/],
  ])('%s is a UsageError, which the app says in one line', (_, context, message) => {
    const thrown = (() => {
      try {
        build(context as Record<string, string>);
      } catch (error) {
        return error as Error;
      }
    })();
    expect(thrown).toBeInstanceOf(UsageError);
    expect(thrown!.message).toMatch(message);
  });
});
