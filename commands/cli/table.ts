import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { databaseErrors, NO_RESPONSE_MS, NoResponse, type DatabasePlace } from './errors.ts';
import { endpointSetting } from './values.ts';

/** The table every command uses unless TABLE_NAME names another (docs/contract.md, section 8). */
export const DEFAULT_TABLE = 'team-resources';

/**
 * The commands' one DynamoDB client: TABLE_NAME (default team-resources), at DYNAMODB_ENDPOINT or
 * in AWS through the default credential chain. It waits as long as DynamoDB keeps answering (8
 * attempts for throttling and failed calls), but 10 s without a byte, before a response or in the
 * middle of one, ends the command with NoResponse naming the endpoint, instead of being retried for
 * minutes. Every other error is tagged with the place, so the command's message names it too.
 */
export function commandTable(startedHere = false) {
  const tableName = process.env.TABLE_NAME?.trim() || DEFAULT_TABLE;
  const endpoint = endpointSetting();
  const place: DatabasePlace = { tableName, endpoint, startedHere };
  const client = new DynamoDBClient({
    endpoint,
    region: process.env.AWS_REGION || (endpoint ? 'local' : undefined),
    // DynamoDB Local keeps a database per access key and region; AWS uses the default chain.
    credentials: endpoint ? { accessKeyId: 'local', secretAccessKey: 'local' } : undefined,
    maxAttempts: 8,
    // The socket's inactivity, before the response and while its body comes: smithy's own timers.
    requestHandler: new NodeHttpHandler({ connectionTimeout: NO_RESPONSE_MS, socketTimeout: NO_RESPONSE_MS }),
  });
  client.middlewareStack.add(
    (next) =>
      async function nameThePlace(args) {
        if (!endpoint) place.region ??= await client.config.region().catch(() => undefined);
        try {
          return await next(args);
        } catch (error) {
          if (error instanceof Error) databaseErrors.set(error, place);
          throw error;
        }
      },
    { step: 'initialize', priority: 'high', name: 'commandTablePlace' },
  );
  // Inside the retry step, around reading the response: silence is said at once, not retried.
  client.middlewareStack.add(
    (next) =>
      async function silenceIsNoResponse(args) {
        try {
          return await next(args);
        } catch (error) {
          throw (error as Error).name === 'TimeoutError' ? new NoResponse(place) : error;
        }
      },
    { step: 'deserialize', priority: 'high', name: 'commandTableSilence' },
  );
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  return { tableName, endpoint, doc };
}
