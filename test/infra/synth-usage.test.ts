import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NODE, ROOT } from '../support/import-process.ts';
import { CDK_CONTEXT, SYNC_CONTEXT } from './support.ts';

/**
 * A context value the stack cannot use is the user's to fix, not a bug: `npm run synth` (and
 * `cdk deploy`) says so in one line on stderr and exits non-zero, without a Node stack trace
 * (infra/app.ts, infra/usage-error.ts). Each case runs the app as the CDK CLI runs it: a process
 * of its own, given its context in CDK_CONTEXT_JSON.
 */
const outdir = mkdtempSync(join(tmpdir(), 'team-resources-synth-usage-'));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Three processes at a time: the cases run concurrently on a machine shared with other work. */
const slots = { free: 3, waiting: [] as (() => void)[] };

async function run(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  if (slots.free === 0) await new Promise<void>((resolve) => slots.waiting.push(resolve));
  else slots.free -= 1;
  try {
    return await new Promise((resolve) => {
      execFile(file, args, { cwd: ROOT, env, timeout: 60_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? ((error.code as number | undefined) ?? null) : 0, stdout, stderr }),
      );
    });
  } finally {
    const next = slots.waiting.shift();
    if (next) next();
    else slots.free += 1;
  }
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

describe('npm run synth with a partial set of the sync keys', () => {
  it('prints which keys are missing in one line and exits non-zero, without a stack trace', async () => {
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
    const alone = await app({ syncVpcId, syncSubnetIds });
    expect(alone).toEqual({ code: 1, stdout: '', stderr: `${message}\n` });
  });
});

describe.concurrent('any context value the stack cannot use', () => {
  const { syncSourceSecretArn: _, ...threeKeys } = SYNC_CONTEXT;
  it.each([
    ['three of the sync keys', threeKeys, /syncSourceSecretArn is missing/],
    ['an optional sync key alone', { syncTimezone: 'Europe/Berlin' }, /needs the sync's four keys/],
    ['a VPC id that is none', { ...SYNC_CONTEXT, syncVpcId: 'my-vpc' }, /syncVpcId is not a VPC id/],
    ['a zone the runtime does not know', { ...SYNC_CONTEXT, syncTimezone: 'Mars/Base' }, /syncTimezone/],
    ['a domain without its certificate', { domainName: 'api.example.com' }, /go together/],
    ['an alarm topic that is no ARN', { alarmTopicArn: 'alarms' }, /alarmTopicArn is not an SNS topic ARN/],
    ['a throttle that is no number', { throttleRateLimit: 'fast' }, /throttleRateLimit must be a number/],
    ['a log level the functions ignore', { logLevel: 'verbose' }, /LOG_LEVEL must be one of/],
    ['a stack name CloudFormation refuses', { stackName: 'team api' }, /stackName must be a CloudFormation/],
    ['a flag that is neither true nor false', { tracing: 'yes' }, /tracing must be true or false/],
    ['a value holding a line break', { ...SYNC_CONTEXT, syncVpcId: 'vpc-1\nvpc-2' }, /"vpc-1\\u000avpc-2"/],
  ])('fails on %s, in one line without a stack trace', async (_, context, message) => {
    const { code, stdout, stderr } = await app(context as Record<string, string>);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(message);
    expect(stderr).not.toMatch(STACK_FRAME);
    expect(stderr.split('\n')).toHaveLength(2); // one line and its end
  });

  it('still synthesizes with all four keys (the same process, nothing refused)', async () => {
    const { code, stderr } = await app(SYNC_CONTEXT);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  });
});
