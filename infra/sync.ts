import { Annotations, Duration, Fn, Stack, Stage, Validations } from 'aws-cdk-lib';
import { SecurityGroup, Subnet, Vpc } from 'aws-cdk-lib/aws-ec2';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { LoggingFormat } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Schedule, ScheduleExpression, ScheduleTargetInput } from 'aws-cdk-lib/aws-scheduler';
import { Construct } from 'constructs';
import {
  SCHEDULER_INPUT,
  SYNC_MEMORY_MB,
  SYNC_RESERVED_CONCURRENCY,
  SYNC_TIMEOUT_MS,
} from '../shared/sync/deployed-settings.ts';
import { isTimeZone } from '../shared/sync/read/times.ts';
import { STACK_NAME_VARIABLE } from '../shared/metrics.ts';
import { DEPLOYED_MAPPING_FILE, MAPPING_FILE_VARIABLE } from '../shared/sync/deployed-mapping.ts';
import { functionBasics, PROJECT_ROOT } from './functions.ts';
import { mappingIntoCode, syncMappingFile } from './sync-mapping.ts';
import { UsageError } from './usage-error.ts';

/**
 * What the sync writes and reads (docs/storage.md): items by key, batches, and the transactions
 * that switch a team, which IAM authorizes as the actions of their parts, a condition check on the
 * lease among them ("Using IAM with DynamoDB transactions",
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html).
 * Never Scan, never a table-level action.
 */
export const SYNC_TABLE_ACTIONS = [
  'dynamodb:BatchGetItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:ConditionCheckItem',
  'dynamodb:DeleteItem',
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:Query',
  'dynamodb:UpdateItem',
] as const;

/** The deployed sync's settings: the four context keys (docs/deploy.md), and two optional ones. */
export interface SyncProps {
  /** The Secrets Manager secret holding the source's credentials, in the JSON shape RDS uses. */
  sourceSecretArn: string;
  /** The VPC, subnets and security groups from which the function reaches the source database. */
  vpcId: string;
  subnetIds: string[];
  securityGroupIds: string[];
  /** The customer managed KMS key the secret is encrypted with, if it is not Secrets Manager's own. */
  secretKeyArn?: string;
  /** The zone of the source's times without one (Laravel's app.timezone). Default: UTC. */
  timezone?: string;
  /**
   * A mapping file (the commands' `--mapping` format), a path from where synth runs: checked at synth
   * and put into the function's code (sync-mapping.ts). Default: Laravel's conventions.
   */
  mappingFile?: string;
}

// Secrets RDS manages are named rds!db-… or rds!cluster-….
const SECRET_ARN = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@!-]+$/;
const KEY_ARN = /^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]+$/;

/** The settings checked, so a bad value fails the synth with its name rather than the first invocation. */
function checked(props: SyncProps): SyncProps {
  const problems: string[] = [];
  if (!SECRET_ARN.test(props.sourceSecretArn))
    problems.push(`syncSourceSecretArn is not a Secrets Manager secret ARN: "${props.sourceSecretArn}"`);
  // EC2 ids: a prefix and 8 or 17 hexadecimal digits.
  const id = (prefix: string) => new RegExp(`^${prefix}-([0-9a-f]{8}|[0-9a-f]{17})$`);
  if (!id('vpc').test(props.vpcId)) problems.push(`syncVpcId is not a VPC id: "${props.vpcId}"`);
  const bad = (ids: string[], prefix: string) => ids.length === 0 || ids.some((each) => !id(prefix).test(each));
  if (bad(props.subnetIds, 'subnet'))
    problems.push(`syncSubnetIds must be subnet ids, comma-separated: "${props.subnetIds.join(',')}"`);
  if (bad(props.securityGroupIds, 'sg'))
    problems.push(
      `syncSecurityGroupIds must be security group ids, comma-separated: "${props.securityGroupIds.join(',')}"`,
    );
  if (props.secretKeyArn !== undefined && !KEY_ARN.test(props.secretKeyArn))
    problems.push(`syncSecretKeyArn is not a KMS key ARN: "${props.secretKeyArn}"`);
  if (props.timezone !== undefined && !isTimeZone(props.timezone))
    problems.push(`syncTimezone must be a time zone such as UTC or Europe/Berlin, not "${props.timezone}"`);
  if (problems.length > 0) throw new UsageError(problems.join('; '));
  return props;
}

/**
 * The sync beside the API (shared/sync/deployed.ts): one function in the team's VPC, invoked by
 * EventBridge Scheduler every minute, the only role that may write the table or read the secret.
 */
export class TableSync extends Construct {
  readonly function: NodejsFunction;
  readonly role: Role;

  constructor(scope: Construct, id: string, props: SyncProps & { table: ITable; logLevel?: string }) {
    super(scope, id);
    const { sourceSecretArn, vpcId, subnetIds, securityGroupIds, secretKeyArn, timezone, mappingFile } = checked(props);
    const mapping = mappingFile === undefined ? undefined : syncMappingFile(mappingFile);
    const stack = Stack.of(this);

    // Imported by id, never looked up: `cdk synth` stays offline.
    const vpc = Vpc.fromVpcAttributes(this, 'Vpc', { vpcId, availabilityZones: Fn.getAzs() });
    Annotations.of(vpc).acknowledgeWarning(
      '@aws-cdk/aws-ec2:vpcAttributeIsListTokenavailabilityZones',
      'The function needs only the VPC id and the subnets given by id; no construct here reads the zones.',
    );
    const subnets = subnetIds.map((subnetId, i) => {
      const subnet = Subnet.fromSubnetId(this, `Subnet${i + 1}`, subnetId);
      Annotations.of(subnet).acknowledgeWarning(
        '@aws-cdk/aws-ec2:noSubnetRouteTableId',
        'The stack adds no route: the VPC routes to DynamoDB and Secrets Manager already (docs/deploy.md).',
      );
      return subnet;
    });
    // Not mutable: the stack adds no rule to the team's security groups.
    const securityGroups = securityGroupIds.map((sg, i) =>
      SecurityGroup.fromSecurityGroupId(this, `SecurityGroup${i + 1}`, sg, { mutable: false }),
    );

    const logGroup = new LogGroup(this, 'Logs', { retention: RetentionDays.ONE_MONTH });
    this.role = new Role(this, 'Role', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    logGroup.grantWrite(this.role);
    props.table.grant(this.role, ...SYNC_TABLE_ACTIONS);
    this.role.addToPolicy(
      new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [secretResource(sourceSecretArn)] }),
    );
    // kms:Decrypt only for a customer managed key, and only through Secrets Manager for this
    // secret: Secrets Manager's own key (aws/secretsmanager) needs none ("GetSecretValue",
    // https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetSecretValue.html; "Secret
    // encryption and decryption in AWS Secrets Manager",
    // https://docs.aws.amazon.com/secretsmanager/latest/userguide/security-encryption.html).
    if (secretKeyArn) {
      this.role.addToPolicy(
        new PolicyStatement({
          actions: ['kms:Decrypt'],
          resources: [secretKeyArn],
          conditions: {
            StringEquals: { 'kms:ViaService': `secretsmanager.${sourceSecretArn.split(':')[3]}.amazonaws.com` },
            StringLike: { 'kms:EncryptionContext:SecretARN': secretResource(sourceSecretArn) },
          },
        }),
      );
    }
    // The network interfaces Lambda creates in the subnets with the function's role ("Giving
    // Lambda functions access to resources in an Amazon VPC",
    // https://docs.aws.amazon.com/lambda/latest/dg/configuration-vpc.html): the actions of the
    // AWS managed policy AWSLambdaVPCAccessExecutionRole, in this account and region only, where
    // that policy names every resource.
    this.role.addToPolicy(
      new PolicyStatement({
        actions: ['ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets'],
        resources: ['*'],
      }),
    );
    this.role.addToPolicy(
      new PolicyStatement({
        actions: [
          'ec2:AssignPrivateIpAddresses',
          'ec2:CreateNetworkInterface',
          'ec2:DeleteNetworkInterface',
          'ec2:UnassignPrivateIpAddresses',
        ],
        resources: [stack.formatArn({ service: 'ec2', resource: '*', resourceName: '*' })],
      }),
    );
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'ec2:DescribeNetworkInterfaces and DescribeSubnets support no resource-level permission; Lambda needs them ' +
        'for the function in the VPC.',
    });
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:*/*]',
      reason:
        "Lambda creates and deletes the function's network interfaces with its role; their ids are not known " +
        'before, so the actions are limited to this account and region.',
    });

    const basics = functionBasics(`${PROJECT_ROOT}functions/sync.ts`);
    this.function = new NodejsFunction(this, 'Function', {
      ...basics,
      bundling: {
        ...basics.bundling,
        // Without the API functions' cold-start aliases (infra/bundling/): the sync starts once a
        // quarter hour, and its code imports what they leave out (node:timers/promises).
        esbuildArgs: {},
        // Minified, but with the names of functions and classes kept: @vlasky/zongji names each binlog
        // event by its class (`this.constructor.name`, lib/binlog_event.js), and its connection config
        // by the driver's; renamed, no event ever arrived and the sync never read MySQL's log.
        keepNames: true,
        // The database drivers are CommonJS and require() Node's built-ins, which an ES module
        // bundle can only do through a require of its own (https://github.com/evanw/esbuild/issues/1921).
        banner:
          "import { createRequire as topLevelCreateRequire } from 'node:module';" +
          'const require = topLevelCreateRequire(import.meta.url);',
        ...(mapping !== undefined && { commandHooks: mappingIntoCode(mapping, Stage.of(this)!.outdir) }),
      },
      description: 'Keeps the table in step with the Laravel database (npm run sync, deployed)',
      memorySize: SYNC_MEMORY_MB,
      timeout: Duration.millis(SYNC_TIMEOUT_MS),
      reservedConcurrentExecutions: SYNC_RESERVED_CONCURRENCY,
      // A failed or throttled invocation is not retried: the schedule brings the next one within a minute.
      retryAttempts: 0,
      maxEventAge: Duration.minutes(1),
      role: this.role,
      logGroup,
      loggingFormat: LoggingFormat.TEXT,
      vpc,
      vpcSubnets: { subnets },
      securityGroups,
      environment: {
        TABLE_NAME: props.table.tableName,
        // The Stack dimension of the sync's metrics (shared/sync/deployed.ts).
        [STACK_NAME_VARIABLE]: stack.stackName,
        SOURCE_SECRET_ARN: sourceSecretArn,
        ...(timezone === undefined ? {} : { SOURCE_TIMEZONE: timezone }),
        // Beside the bundle: a relative path is the code's (shared/sync/deployed-config.ts).
        ...(mapping === undefined ? {} : { [MAPPING_FILE_VARIABLE]: DEPLOYED_MAPPING_FILE }),
        ...(props.logLevel === undefined ? {} : { LOG_LEVEL: props.logLevel }),
      },
    });

    // Every minute, EventBridge Scheduler's shortest rate; it invokes the function asynchronously
    // ("Invoke a Lambda function on a schedule",
    // https://docs.aws.amazon.com/lambda/latest/dg/with-eventbridge-scheduler.html). Its role may
    // invoke this function and nothing else (aws-scheduler-targets' LambdaInvoke would also grant
    // the function's versions and aliases, `<arn>:*`), and only this account's default schedule
    // group may assume it, as LambdaInvoke's own role would allow ("Set up the execution role",
    // https://docs.aws.amazon.com/scheduler/latest/UserGuide/setting-up.html#setting-up-execution-role).
    const scheduleRole = new Role(this, 'ScheduleRole', {
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com', {
        conditions: {
          StringEquals: {
            'aws:SourceAccount': stack.account,
            'aws:SourceArn': stack.formatArn({
              service: 'scheduler',
              resource: 'schedule-group',
              resourceName: 'default',
            }),
          },
        },
      }),
    });
    scheduleRole.addToPolicy(
      new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [this.function.functionArn] }),
    );
    const fn = this.function;
    new Schedule(this, 'Schedule', {
      schedule: ScheduleExpression.rate(Duration.minutes(1)),
      description: 'Invokes the sync every minute: the running invocation hands over to the next',
      target: {
        bind: () => ({
          arn: fn.functionArn,
          role: scheduleRole,
          input: ScheduleTargetInput.fromObject(SCHEDULER_INPUT),
          // Delivery is retried within the minute at most: the next minute brings the next invocation.
          retryPolicy: { maximumEventAgeInSeconds: 60, maximumRetryAttempts: 2 },
        }),
      },
    });
  }
}

/**
 * The secret as IAM names it. A complete ARN ends in the hyphen and six characters Secrets Manager
 * adds to the name; a partial one (the name only) gets them as six single-character wildcards
 * ("Finding a secret from a partial ARN",
 * https://docs.aws.amazon.com/secretsmanager/latest/userguide/troubleshoot.html#ARN_secretnamehyphen).
 */
function secretResource(arn: string): string {
  return /-[A-Za-z0-9]{6}$/.test(arn) ? arn : `${arn}-??????`;
}
