import type { Kind, Limit } from './capacity-ledger.ts';

/**
 * What DynamoDB answers when it throttles a request, for the DynamoDB limiter (dynamodb-limiter.ts),
 * as AWS documents it:
 *
 * - An error is HTTP 400 with `{"__type": "com.amazonaws.dynamodb.v20120810#<Exception>", "message":
 *   "…"}` (developer guide, "Error handling with DynamoDB", Programming.Errors.html).
 * - A provisioned table answers ProvisionedThroughputExceededException; "for tables using on-demand
 *   mode", ThrottlingException "might be returned for any data plane API operation if your request
 *   rate is too high" (the same page). Both carry ThrottlingReasons: `<Table|Index><Read|Write>
 *   <LimitType>` and the ARN of the table (throttling-diagnosing-workflow.html, API_ThrottlingReason
 *   .html); the SDK's model names the list `ThrottlingReasons` in the first, `throttlingReasons` in
 *   the second. A partition key value past its limit is `KeyRangeThroughputExceeded`, in both modes.
 * - The messages are those the API reference gives for the two kinds of throttling
 *   (API_TransactWriteItems.html, the cancellation reasons): on an on-demand table, "Throughput
 *   exceeds the current capacity of your table or index. …"; on a provisioned one, "The level of
 *   configured provisioned throughput for the table was exceeded. …".
 * - A transaction is not answered with either: "the entire operation fails with a
 *   TransactionCanceledException if any item experiences throttling"
 *   (throttling-key-range-limit-exceeded-mitigation.html), whose CancellationReasons say
 *   `ThrottlingError` (on-demand) or `ProvisionedThroughputExceeded` (provisioned) for each item
 *   throttled and `None` for the others, in the request's order.
 */

export type ThrottlingException = 'ProvisionedThroughputExceededException' | 'ThrottlingException';

interface ThrottledTable {
  arn: string;
  /** PAY_PER_REQUEST: the mode this project's tables use (commands/store/table.ts, the stack). */
  onDemand: boolean;
}

export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

const PREFIX = 'com.amazonaws.dynamodb.v20120810#';
const ON_DEMAND_MESSAGE =
  'Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table ' +
  'or index so please try again shortly. If exceptions persist, check if you have a hot key: ' +
  'https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html.';
const PROVISIONED_MESSAGE =
  'The level of configured provisioned throughput for the table was exceeded. Consider increasing your ' +
  'provisioning level with the UpdateTable API.';

/**
 * The reason a limit gives. A partition key value past its 1,000 WCU or 3,000 RCU is a key range's
 * limit. So is a new on-demand table past its initial 4,000 WCU or 12,000 RCU: that is what the
 * partitions it starts with can serve (warm-throughput-scenarios.html), and DynamoDB documents no
 * other reason for it; on a provisioned table, the table's own limit is its provisioned throughput.
 */
function reason(kind: Kind, limit: Limit, table: ThrottledTable): string {
  const operation = kind === 'write' ? 'Write' : 'Read';
  const type = limit === 'table' && !table.onDemand ? 'ProvisionedThroughputExceeded' : 'KeyRangeThroughputExceeded';
  return `Table${operation}${type}`;
}

/** The exception a table answers with unless the limiter was told which: by its capacity mode. */
const exceptionFor = (table: ThrottledTable, chosen?: ThrottlingException): ThrottlingException =>
  chosen ?? (table.onDemand ? 'ThrottlingException' : 'ProvisionedThroughputExceededException');

/** A throttled request, single-item, Query or Scan, or a batch none of whose items fitted. */
export function throttled(kind: Kind, limit: Limit, table: ThrottledTable, chosen?: ThrottlingException): Answer {
  const exception = exceptionFor(table, chosen);
  const reasons = [{ reason: reason(kind, limit, table), resource: table.arn }];
  const onDemandMessage = exception === 'ThrottlingException';
  return {
    status: 400,
    body: {
      __type: `${PREFIX}${exception}`,
      message: onDemandMessage ? ON_DEMAND_MESSAGE : PROVISIONED_MESSAGE,
      [onDemandMessage ? 'throttlingReasons' : 'ThrottlingReasons']: reasons,
    },
  };
}

/** A transaction refused: per item, in order, its table when it was throttled, or undefined. */
export function transactionThrottled(items: (ThrottledTable | undefined)[]): Answer {
  const reasons = items.map((table) =>
    table === undefined
      ? { Code: 'None' }
      : table.onDemand
        ? { Code: 'ThrottlingError', Message: ON_DEMAND_MESSAGE }
        : { Code: 'ProvisionedThroughputExceeded', Message: PROVISIONED_MESSAGE },
  );
  return {
    status: 400,
    body: {
      __type: `${PREFIX}TransactionCanceledException`,
      message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons
        .map(({ Code }) => Code)
        .join(', ')}]`,
      CancellationReasons: reasons,
    },
  };
}
