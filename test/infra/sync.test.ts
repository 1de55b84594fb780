import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContextAttribute } from 'aws-cdk-lib/aws-scheduler';
import nag from 'cdk-nag';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { propsFromContext, SYNC_CONTEXT_KEYS } from '../../infra/context.ts';
import { TABLE_READ_ACTIONS } from '../../infra/route-functions.ts';
import { SYNC_TABLE_ACTIONS } from '../../infra/sync.ts';
import { LOG_RETAINED_ALARM_BYTES } from '../../infra/sync-metrics.ts';
import { METRICS_NAMESPACE, STACK_DIMENSION, STACK_NAME_VARIABLE } from '../../shared/metrics.ts';
import { SERVED_ROUTES } from '../../shared/api/routes.ts';
import {
  SCHEDULER_INPUT,
  SYNC_MEMORY_MB,
  SYNC_RESERVED_CONCURRENCY,
  SYNC_TIMEOUT_MS,
} from '../../shared/sync/deployed-settings.ts';
import { SYNC_METRICS } from '../../shared/sync/metrics.ts';
import { DEPLOYED_MAPPING_FILE, MAPPING_FILE_VARIABLE } from '../../shared/sync/deployed-mapping.ts';
import { logicalId, resourcesOf, SYNC_CONTEXT, type Synthesized, synthStack } from './support.ts';

/**
 * The sync beside the API (infra/sync.ts): deployed only with the four context keys, offline, in
 * the VPC given by id, invoked every minute by EventBridge Scheduler, the one role that may write
 * the table or read the secret, watched on the dashboard and by alarms.
 */
const fromContext = (context: Record<string, unknown>) =>
  synthStack({ context, props: (app) => propsFromContext(app.node) });

let plain: Synthesized;
let synced: Synthesized;
let mappingDir: string;
beforeAll(() => {
  plain = fromContext({});
  synced = fromContext(SYNC_CONTEXT);
  mappingDir = mkdtempSync(join(tmpdir(), 'team-resources-sync-mapping-test-'));
});
afterAll(() => rmSync(mappingDir, { recursive: true, force: true }));

type Statement = { Action: string | string[]; Resource: unknown; Effect: string; Condition?: unknown };
const statementsOf = (s: Synthesized, roleId?: string) =>
  Object.values(resourcesOf(s.template, 'AWS::IAM::Policy'))
    .filter((p) => roleId === undefined || p.Properties.Roles.some((r: { Ref: string }) => r.Ref === roleId))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
const actions = (statement: Statement) => [statement.Action].flat();
const syncFunction = () =>
  resourcesOf(synced.template, 'AWS::Lambda::Function')[logicalId(synced.stack, synced.stack.sync!.function)]!;
const syncRoleId = () => logicalId(synced.stack, synced.stack.sync!.role);
const tableArn = () => ({ 'Fn::GetAtt': [logicalId(synced.stack, synced.stack.table as never), 'Arn'] });

describe('without the four context keys', () => {
  it('deploys no sync: no function beyond the routes, no schedule, no VPC, no secret', () => {
    expect(plain.stack.sync).toBeUndefined();
    plain.template.resourceCountIs('AWS::Lambda::Function', SERVED_ROUTES.length);
    plain.template.resourceCountIs('AWS::Scheduler::Schedule', 0);
    for (const fn of Object.values(resourcesOf(plain.template, 'AWS::Lambda::Function')))
      expect(fn.Properties.VpcConfig).toBeUndefined();
    expect(JSON.stringify(plain.template.toJSON())).not.toMatch(/secretsmanager|kms:|ec2:/);
  });
});

describe('with the four context keys', () => {
  it('deploys one function more: nodejs24.x on arm64, 15 minutes, the memory chosen, at most three at once', () => {
    synced.template.resourceCountIs('AWS::Lambda::Function', SERVED_ROUTES.length + 1);
    expect(syncFunction().Properties).toMatchObject({
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      Handler: 'index.handler',
      Timeout: SYNC_TIMEOUT_MS / 1000,
      MemorySize: SYNC_MEMORY_MB,
      ReservedConcurrentExecutions: SYNC_RESERVED_CONCURRENCY,
      LoggingConfig: { LogFormat: 'Text' },
    });
    expect(SYNC_TIMEOUT_MS).toBe(900_000);
    expect(SYNC_RESERVED_CONCURRENCY).toBe(3);
  });

  it('runs in the VPC given by id: exactly the subnets and security groups of the context keys', () => {
    expect(syncFunction().Properties.VpcConfig).toEqual({
      SubnetIds: ['subnet-0123456789abcdef0', 'subnet-0fedcba9876543210'],
      SecurityGroupIds: ['sg-0123456789abcdef0'],
    });
    // Nothing is created in the team's VPC, and its security groups gain no rule.
    for (const type of ['AWS::EC2::SecurityGroup', 'AWS::EC2::SecurityGroupIngress', 'AWS::EC2::SecurityGroupEgress'])
      synced.template.resourceCountIs(type, 0);
  });

  it("reads the table, the secret and the stack's name (its metrics' Stack dimension) from its environment, and nothing else", () => {
    expect(syncFunction().Properties.Environment.Variables).toEqual({
      TABLE_NAME: { Ref: logicalId(synced.stack, synced.stack.table as never) },
      SOURCE_SECRET_ARN: SYNC_CONTEXT.syncSourceSecretArn,
      [STACK_NAME_VARIABLE]: 'TeamResourcesApi',
    });
  });

  it('is not retried by Lambda: a failed or throttled invocation is dropped within a minute', () => {
    synced.template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: logicalId(synced.stack, synced.stack.sync!.function) },
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 60,
    });
  });

  it('is invoked every minute by EventBridge Scheduler, with the context attributes as its event', () => {
    const [schedule] = Object.values(resourcesOf(synced.template, 'AWS::Scheduler::Schedule'));
    expect(schedule!.Properties).toMatchObject({
      ScheduleExpression: 'rate(1 minute)',
      FlexibleTimeWindow: { Mode: 'OFF' },
      State: 'ENABLED',
      Target: {
        Arn: { 'Fn::GetAtt': [logicalId(synced.stack, synced.stack.sync!.function), 'Arn'] },
        RetryPolicy: { MaximumEventAgeInSeconds: 60 },
      },
    });
    expect(JSON.parse(schedule!.Properties.Target.Input)).toEqual(SCHEDULER_INPUT);
    expect(Object.values(SCHEDULER_INPUT)).toEqual([
      ContextAttribute.scheduleArn,
      ContextAttribute.scheduledTime,
      ContextAttribute.executionId,
      ContextAttribute.attemptNumber,
    ]);
  });

  it("gives the schedule a role that only this account's schedules may assume and that may only invoke the sync", () => {
    const [schedule] = Object.values(resourcesOf(synced.template, 'AWS::Scheduler::Schedule'));
    const roleId = schedule!.Properties.Target.RoleArn['Fn::GetAtt'][0];
    const role = resourcesOf(synced.template, 'AWS::IAM::Role')[roleId]!;
    expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
      {
        Action: 'sts:AssumeRole',
        Effect: 'Allow',
        Principal: { Service: 'scheduler.amazonaws.com' },
        Condition: {
          StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' }, 'aws:SourceArn': expect.anything() },
        },
      },
    ]);
    expect(JSON.stringify(role.Properties.AssumeRolePolicyDocument)).toContain(':schedule-group/default');
    expect(statementsOf(synced, roleId)).toEqual([
      {
        Effect: 'Allow',
        Action: 'lambda:InvokeFunction',
        Resource: { 'Fn::GetAtt': [logicalId(synced.stack, synced.stack.sync!.function), 'Arn'] },
      },
    ]);
  });

  it("gives the sync's role its log group, the table by key (writes included), the secret, and the network interfaces Lambda makes", () => {
    const statements = statementsOf(synced, syncRoleId());
    expect(statements.map((s) => [...actions(s)].sort())).toEqual([
      ['logs:CreateLogStream', 'logs:PutLogEvents'],
      [...SYNC_TABLE_ACTIONS].sort(),
      ['secretsmanager:GetSecretValue'],
      ['ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets'],
      [
        'ec2:AssignPrivateIpAddresses',
        'ec2:CreateNetworkInterface',
        'ec2:DeleteNetworkInterface',
        'ec2:UnassignPrivateIpAddresses',
      ],
    ]);
    expect(statements[1]!.Resource).toEqual(tableArn());
    expect(statements[2]!.Resource).toBe(SYNC_CONTEXT.syncSourceSecretArn);
    expect(JSON.stringify(statements[4]!.Resource)).toMatch(/:ec2:.*AWS::Region.*AWS::AccountId.*:\*\/\*/);
    expect(SYNC_TABLE_ACTIONS.some((a) => /Scan|Table|PartiQL|\*/.test(a))).toBe(false);
    expect(statements.every((s) => s.Effect === 'Allow')).toBe(true);
  });

  it('lets no other role write the table, read the secret or use a key: the API stays read-only', () => {
    const others = Object.entries(resourcesOf(synced.template, 'AWS::IAM::Policy'))
      .filter(([, p]) => !p.Properties.Roles.some((r: { Ref: string }) => r.Ref === syncRoleId()))
      .flatMap(([, p]) => p.Properties.PolicyDocument.Statement as Statement[]);
    expect(others.length).toBeGreaterThan(0);
    const granted = others.flatMap(actions);
    expect(
      granted.filter((a) => a.startsWith('dynamodb:') && !(TABLE_READ_ACTIONS as readonly string[]).includes(a)),
    ).toEqual([]);
    expect(granted.filter((a) => /^(secretsmanager|kms|ec2):/.test(a) || a.includes('*'))).toEqual([]);
    expect(granted.filter((a) => a.startsWith('lambda:'))).toEqual(['lambda:InvokeFunction']);
    // No managed policy anywhere, and no inline policy on a role.
    for (const role of Object.values(resourcesOf(synced.template, 'AWS::IAM::Role'))) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
      expect(role.Properties.Policies).toBeUndefined();
    }
  });

  it('asks nothing of AWS at synth: no lookup, no missing context', () => {
    const assembly = synced.app.synth();
    try {
      expect(assembly.manifest.missing ?? []).toEqual([]);
    } finally {
      rmSync(assembly.directory, { recursive: true, force: true });
    }
  });

  it('leaves cdk-nag nothing unacknowledged, each acknowledgment of the sync with its reason', () => {
    expect(new nag.AwsSolutionsChecks().validateScope(synced.stack).violations).toEqual([]);
  });
});

describe('the optional sync keys', () => {
  it('name a partial secret ARN with the six characters Secrets Manager adds', () => {
    const partial = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:laravel-db';
    const s = fromContext({ ...SYNC_CONTEXT, syncSourceSecretArn: partial });
    const secretStatement = statementsOf(s, logicalId(s.stack, s.stack.sync!.role)).find((st) =>
      actions(st).includes('secretsmanager:GetSecretValue'),
    )!;
    expect(secretStatement.Resource).toBe(`${partial}-??????`);
  });

  it('take the secret RDS manages for a database (rds!db-…)', () => {
    const managed =
      'arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-0b2c6f1e-8a4d-4f7e-9c11-2d5e7a9b3c4d-Xy12Zq';
    const s = fromContext({ ...SYNC_CONTEXT, syncSourceSecretArn: managed });
    const fn = resourcesOf(s.template, 'AWS::Lambda::Function')[logicalId(s.stack, s.stack.sync!.function)]!;
    expect(fn.Properties.Environment.Variables.SOURCE_SECRET_ARN).toBe(managed);
  });

  it('grant kms:Decrypt on a customer managed key, through Secrets Manager and for that secret only', () => {
    const key = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
    const s = fromContext({ ...SYNC_CONTEXT, syncSecretKeyArn: key });
    const kms = statementsOf(s).filter((st) => actions(st).some((a) => a.startsWith('kms:')));
    expect(kms).toEqual([
      {
        Effect: 'Allow',
        Action: 'kms:Decrypt',
        Resource: key,
        Condition: {
          StringEquals: { 'kms:ViaService': 'secretsmanager.eu-west-1.amazonaws.com' },
          StringLike: { 'kms:EncryptionContext:SecretARN': SYNC_CONTEXT.syncSourceSecretArn },
        },
      },
    ]);
    expect(JSON.stringify(statementsOf(synced))).not.toContain('kms:');
  });

  it('give the function a mapping file (-c syncMapping), checked at synth and named by SOURCE_MAPPING_FILE beside its code', () => {
    const path = join(mappingDir, 'mapping.json');
    writeFileSync(path, JSON.stringify({ queries: { teams: 'SELECT id, slug, name, NULL AS user_id FROM teams' } }));
    const s = fromContext({ ...SYNC_CONTEXT, syncMapping: path });
    const fn = resourcesOf(s.template, 'AWS::Lambda::Function')[logicalId(s.stack, s.stack.sync!.function)]!;
    expect(fn.Properties.Environment.Variables[MAPPING_FILE_VARIABLE]).toBe(DEPLOYED_MAPPING_FILE);
    expect(syncFunction().Properties.Environment.Variables).not.toHaveProperty(MAPPING_FILE_VARIABLE);
  });

  it('fail the synth on a mapping file that is no mapping, naming the file and the key', () => {
    const path = join(mappingDir, 'bad.json');
    writeFileSync(path, JSON.stringify({ queries: { projects: 'DROP TABLE projects' } }));
    expect(() => fromContext({ ...SYNC_CONTEXT, syncMapping: path })).toThrow(
      `syncMapping: the mapping ${path} is not usable: queries.projects: must be a SELECT`,
    );
  });

  it("set the source's time zone", () => {
    const s = fromContext({ ...SYNC_CONTEXT, syncTimezone: 'Europe/Berlin' });
    const fn = resourcesOf(s.template, 'AWS::Lambda::Function')[logicalId(s.stack, s.stack.sync!.function)]!;
    expect(fn.Properties.Environment.Variables.SOURCE_TIMEZONE).toBe('Europe/Berlin');
  });
});

describe('a partial or wrong set of sync keys', () => {
  it('fails the synth, naming the keys that are missing', () => {
    expect(() => fromContext({ syncSourceSecretArn: SYNC_CONTEXT.syncSourceSecretArn })).toThrow(
      'the sync needs all four context values syncSourceSecretArn, syncVpcId, syncSubnetIds, syncSecurityGroupIds: ' +
        'syncVpcId, syncSubnetIds, syncSecurityGroupIds are missing (or give none of them for no sync)',
    );
    const { syncSecurityGroupIds: _, ...three } = SYNC_CONTEXT;
    expect(() => fromContext(three)).toThrow(/: syncSecurityGroupIds is missing/);
    expect(SYNC_CONTEXT_KEYS).toEqual(['syncSourceSecretArn', 'syncVpcId', 'syncSubnetIds', 'syncSecurityGroupIds']);
  });

  it('fails on an optional key without the four', () => {
    expect(() => fromContext({ syncTimezone: 'UTC' })).toThrow("context value syncTimezone needs the sync's four keys");
    expect(() => fromContext({ syncMapping: 'mapping.json' })).toThrow(
      "context value syncMapping needs the sync's four keys",
    );
  });

  it('fails on a value that is not what its key names', () => {
    expect(() => fromContext({ ...SYNC_CONTEXT, syncVpcId: 'my-vpc' })).toThrow('syncVpcId is not a VPC id: "my-vpc"');
    expect(() => fromContext({ ...SYNC_CONTEXT, syncSubnetIds: 'subnet-0123456789abcdef0,sg-12345678' })).toThrow(
      /syncSubnetIds must be subnet ids/,
    );
    expect(() => fromContext({ ...SYNC_CONTEXT, syncSecurityGroupIds: ',' })).toThrow(/syncSecurityGroupIds must be/);
    expect(() => fromContext({ ...SYNC_CONTEXT, syncSourceSecretArn: 'laravel-db' })).toThrow(
      /not a Secrets Manager secret ARN/,
    );
    expect(() => fromContext({ ...SYNC_CONTEXT, syncTimezone: 'Mars/Base' })).toThrow(
      /syncTimezone must be a time zone/,
    );
  });
});

describe("the sync's row and alarms", () => {
  const alarms = (s: Synthesized) =>
    Object.entries(resourcesOf(s.template, 'AWS::CloudWatch::Alarm'))
      .filter(([id]) => id.startsWith('Sync'))
      .map(([, alarm]) => alarm.Properties);
  const byMetric = (name: string, stat: string) =>
    alarms(synced).find(
      (a) => a.Metrics?.[0]?.MetricStat?.Metric.MetricName === name && a.Metrics[0].MetricStat.Stat === stat,
    )!;

  it('add five alarms, each saying where to look; the API keeps its own', () => {
    expect(alarms(plain)).toEqual([]);
    expect(alarms(synced)).toHaveLength(5);
    synced.template.resourceCountIs('AWS::CloudWatch::Alarm', 6 + 2 * SERVED_ROUTES.length + 5);
    for (const alarm of alarms(synced)) expect(alarm.AlarmDescription).toMatch(/: see /);
  });

  it("watch this stack's sync only: each metric by its Stack dimension", () => {
    const watched = alarms(synced).flatMap((a) => a.Metrics ?? []);
    expect(watched.length).toBeGreaterThan(0);
    for (const { MetricStat } of watched)
      expect(MetricStat.Metric.Dimensions).toEqual([{ Name: STACK_DIMENSION, Value: 'TeamResourcesApi' }]);
  });

  it('page when the sync stays more than a minute behind for 3 minutes', () => {
    expect(byMetric('SyncLag', 'Maximum')).toMatchObject({
      Metrics: [{ MetricStat: { Metric: { Namespace: METRICS_NAMESPACE }, Period: 60 } }],
      Threshold: 60,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      TreatMissingData: 'notBreaching',
    });
  });

  it('page when the source fails the sync in 3 of 5 minutes', () => {
    expect(byMetric('SyncSourceErrors', 'Sum')).toMatchObject({
      Metrics: [{ MetricStat: { Period: 60 } }],
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      EvaluationPeriods: 5,
      DatapointsToAlarm: 3,
      TreatMissingData: 'notBreaching',
    });
  });

  it('page when the source holds back 5 GiB of log or more for the sync for 15 minutes, naming the caps a DBA sets', () => {
    const alarm = byMetric('SyncLogRetainedBytes', 'Maximum');
    expect(alarm).toMatchObject({
      Metrics: [{ MetricStat: { Metric: { Namespace: METRICS_NAMESPACE }, Period: 300 } }],
      Threshold: 5 * 1024 ** 3,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      TreatMissingData: 'notBreaching',
    });
    expect(LOG_RETAINED_ALARM_BYTES).toBe(alarm.Threshold);
    expect(alarm.AlarmDescription).toContain('max_slot_wal_keep_size');
    expect(alarm.AlarmDescription).toContain('binlog retention');
    expect(alarm.AlarmDescription.length).toBeLessThanOrEqual(1024); // CloudWatch's limit
  });

  it('page when no sync metric arrives at all: missing data is breaching', () => {
    expect(byMetric('SyncSourceErrors', 'SampleCount')).toMatchObject({
      Metrics: [{ MetricStat: { Period: 300 } }],
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    });
  });

  it('page when the function fails', () => {
    expect(alarms(synced).find((a) => a.Namespace === 'AWS/Lambda')).toMatchObject({
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(synced.stack, synced.stack.sync!.function) } }],
      Threshold: 1,
    });
  });

  it('notify the alarm topic like every other alarm', () => {
    const topic = 'arn:aws:sns:eu-west-1:123456789012:alarms';
    for (const alarm of alarms(fromContext({ ...SYNC_CONTEXT, alarmTopicArn: topic }))) {
      expect(alarm.AlarmActions).toEqual([topic]);
      expect(alarm.OKActions).toEqual([topic]);
    }
  });

  it("put the sync's lag, log held back, changes applied, items written, rows refused and source errors on the dashboard", () => {
    const body = Object.values(resourcesOf(synced.template, 'AWS::CloudWatch::Dashboard'))[0]!.Properties.DashboardBody;
    const json = JSON.parse(
      (body['Fn::Join'][1] as unknown[]).map((p) => (typeof p === 'string' ? p : 'TOKEN')).join(''),
    );
    const titles = (json.widgets as { properties: { title: string } }[]).map((w) => w.properties.title);
    expect(titles.filter((t) => t.startsWith('Sync'))).toEqual([
      'Sync lag (s, maximum a minute)',
      'Sync log held back in the source (bytes, maximum a minute)',
      'Sync changes applied and items written (a minute)',
      'Sync rows refused and source errors (a minute)',
      'Sync function: errors, throttles, concurrent executions',
    ]);
    const named = JSON.stringify(json);
    for (const { Name } of SYNC_METRICS) expect(named).toContain(`["${METRICS_NAMESPACE}","${Name}"`);
  });
});
