import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';

/**
 * The benchmark's floor for a function's own calls (bench parts 3 and 4): a Lambda handler that
 * does nothing but DynamoDB calls with the document client, bundled exactly as the functions are
 * (functions.ts synthesizes it as a NodejsFunction with infra/functions.ts
 * functionBasics()). No middleware, no logger, no validation: what any handler making these
 * calls must pay at least.
 *
 * The event says which calls to make, with the same parameters the API's reader sends:
 * `batchGet` keys (one BatchGetItem, as the token and team head read), then `query` (one
 * strongly consistent Query of an ordinal range, projecting `j`).
 */
export interface BareEvent {
  batchGet?: { pk: string; sk: string }[];
  query?: { pk: string; first: string; last: string };
}

const TableName = process.env.TABLE_NAME!;
const doc = DynamoDBDocumentClient.from(new DynamoDBClient({}));

export async function handler(event: BareEvent): Promise<{ statusCode: number; body: string }> {
  let found = 0;
  if (event.batchGet) {
    const result = await doc.send(new BatchGetCommand({ RequestItems: { [TableName]: { Keys: event.batchGet } } }));
    found = result.Responses?.[TableName]?.length ?? 0;
  }
  let body = `{"found":${found}}`;
  if (event.query) {
    const result = await doc.send(new QueryCommand({
      TableName,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :first AND :last',
      ExpressionAttributeValues: { ':pk': event.query.pk, ':first': event.query.first, ':last': event.query.last },
      ProjectionExpression: 'j',
      ConsistentRead: true,
    }));
    body = `[${(result.Items ?? []).map((item) => item.j as string).join(',')}]`;
  }
  return { statusCode: 200, body };
}
