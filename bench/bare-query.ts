import { QueryCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { API_CLIENT_LIMITS, createDynamoDbClient } from '../shared/store/dynamodb-client.ts';

/**
 * The cold-start floor of any DynamoDB-backed handler (bench part 3, for information): a Lambda
 * handler that imports only the plain DynamoDB client, built as the functions build theirs, and
 * runs one Query, bundled exactly as the functions are. The Query is a list function's page
 * Query: eventually consistent, an ordinal range, projecting `j`.
 */
const TableName = process.env.TABLE_NAME!;
const client = createDynamoDbClient({ endpoint: process.env.DYNAMODB_ENDPOINT || undefined, ...API_CLIENT_LIMITS });

export async function handler(event: { query: { pk: string; first: string; last: string } }): Promise<{ statusCode: number; body: string }> {
  const result = await client.send(new QueryCommand({
    TableName,
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :first AND :last',
    ExpressionAttributeValues: { ':pk': { S: event.query.pk }, ':first': { S: event.query.first }, ':last': { S: event.query.last } },
    ProjectionExpression: 'j',
    ConsistentRead: false,
  }));
  return { statusCode: 200, body: `[${(result.Items ?? []).map((item: Record<string, AttributeValue>) => item.j?.S).join(',')}]` };
}
