import { BatchGetItemCommand, QueryCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { API_CLIENT_LIMITS, createDynamoDbClient } from '../shared/store/dynamodb-client.ts';

/**
 * The benchmark's like-for-like floor for a function (bench parts 3 and 4): a Lambda handler that
 * does nothing but a function's own DynamoDB calls, with the same plain client built the same
 * way (shared/store/dynamodb-client.ts, the functions' API_CLIENT_LIMITS), bundled exactly as the
 * functions are (functions.ts synthesizes it as a NodejsFunction with infra/functions.ts
 * functionBasics()). No middleware, no logger, no validation, no decoding beyond the page's `j`:
 * what any handler making these calls must pay at least.
 *
 * The event says which calls to make, with the parameters the API's reader sends: `batchGet`
 * keys (one eventually consistent BatchGetItem, as the token and team head read), and `query` (one
 * eventually consistent Query of an ordinal range, projecting `j`); `together` sends both at once,
 * as a warm function does for a token it recently saw, instead of one after the other.
 */
export interface BareEvent {
  batchGet?: { pk: string; sk: string }[];
  query?: { pk: string; first: string; last: string };
  together?: boolean;
}

const TableName = process.env.TABLE_NAME!;
const client = createDynamoDbClient({ endpoint: process.env.DYNAMODB_ENDPOINT || undefined, ...API_CLIENT_LIMITS });

async function batchGet(keys: { pk: string; sk: string }[]): Promise<number> {
  const result = await client.send(new BatchGetItemCommand({
    RequestItems: { [TableName]: { Keys: keys.map((key) => ({ pk: { S: key.pk }, sk: { S: key.sk } })), ConsistentRead: false } },
  }));
  return result.Responses?.[TableName]?.length ?? 0;
}

async function query(range: { pk: string; first: string; last: string }): Promise<string> {
  const result = await client.send(new QueryCommand({
    TableName,
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :first AND :last',
    ExpressionAttributeValues: { ':pk': { S: range.pk }, ':first': { S: range.first }, ':last': { S: range.last } },
    ProjectionExpression: 'j',
    ConsistentRead: false,
  }));
  return `[${(result.Items ?? []).map((item: Record<string, AttributeValue>) => item.j?.S).join(',')}]`;
}

export async function handler(event: BareEvent): Promise<{ statusCode: number; body: string }> {
  const { batchGet: keys, query: range } = event;
  if (keys && range && event.together) {
    const [, body] = await Promise.all([batchGet(keys), query(range)]);
    return { statusCode: 200, body };
  }
  const found = keys ? await batchGet(keys) : 0;
  return { statusCode: 200, body: range ? await query(range) : `{"found":${found}}` };
}
