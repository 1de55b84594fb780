import { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, BillingMode, Table, TableEncryption, type ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { KEY_SCHEMA } from '../shared/store/keys.ts';
import { StackPart } from './stack-part.ts';

const TABLE_NAME_PATTERN = /^[A-Za-z0-9_.-]{3,255}$/;

/**
 * The one table (string `pk` + string `sk`): created on-demand, with point-in-time recovery,
 * deletion protection and the AWS-managed key, and kept when the stack goes; or an existing table
 * of that key schema, served by name.
 */
export class DataTable extends StackPart {
  readonly table: ITable;

  constructor(scope: Construct, id: string, props: { existingTableName?: string }) {
    super(scope, id);
    this.table = props.existingTableName === undefined ? createTable(this) : importTable(this, props.existingTableName);
  }
}

function createTable(scope: Construct): Table {
  return new Table(scope, 'Table', {
    partitionKey: { name: KEY_SCHEMA.partitionKey, type: AttributeType.STRING },
    sortKey: { name: KEY_SCHEMA.sortKey, type: AttributeType.STRING },
    billingMode: BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    deletionProtection: true,
    encryption: TableEncryption.AWS_MANAGED,
    removalPolicy: RemovalPolicy.RETAIN,
  });
}

function importTable(scope: Construct, tableName: string): ITable {
  if (!TABLE_NAME_PATTERN.test(tableName)) throw new Error(`existing table name is not a DynamoDB table name: "${tableName}"`);
  return Table.fromTableName(scope, 'Table', tableName);
}
