import type { Stack } from 'aws-cdk-lib';
import { AttributeType, BillingMode, Table, TableEncryption, type ITable } from 'aws-cdk-lib/aws-dynamodb';
import { KEY_SCHEMA } from '../shared/table/keys.ts';
import { UsageError } from './usage-error.ts';

/**
 * The table the API serves: on-demand, point-in-time recovery, deletion protection, kept when the
 * stack goes (a Table's removal policy is RETAIN unless told otherwise); or an existing one (string
 * `pk`/`sk`) named by existingTableName.
 */
export function serviceTable(stack: Stack, existingTableName?: string): ITable {
  if (existingTableName === undefined) {
    return new Table(stack, 'Table', {
      partitionKey: { name: KEY_SCHEMA.partitionKey, type: AttributeType.STRING },
      sortKey: { name: KEY_SCHEMA.sortKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      encryption: TableEncryption.AWS_MANAGED,
    });
  }
  if (/^[A-Za-z0-9_.-]{3,255}$/.test(existingTableName)) return Table.fromTableName(stack, 'Table', existingTableName);
  throw new UsageError(`existing table name is not a DynamoDB table name: "${existingTableName}"`);
}
