import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';

/**
 * The cold-start floor (bench part 3): a Lambda handler that imports only the DynamoDB document
 * client and runs one Query, bundled exactly as the functions are (functions.ts synthesizes
 * it as a NodejsFunction with infra/functions.ts functionBasics()). The Query is the one a list
 * function sends for a page: strongly consistent, an ordinal range, projecting `j`.
 */
const TableName = process.env.TABLE_NAME!;
const doc = DynamoDBDocumentClient.from(new DynamoDBClient({}));

export async function handler(event: { query: { pk: string; first: string; last: string } }): Promise<{ statusCode: number; body: string }> {
  const result = await doc.send(new QueryCommand({
    TableName,
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :first AND :last',
    ExpressionAttributeValues: { ':pk': event.query.pk, ':first': event.query.first, ':last': event.query.last },
    ProjectionExpression: 'j',
    ConsistentRead: true,
  }));
  return { statusCode: 200, body: `[${(result.Items ?? []).map((item) => item.j as string).join(',')}]` };
}
