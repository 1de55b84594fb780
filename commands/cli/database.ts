import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { databaseErrors, isSilence, NO_RESPONSE_MS, NoResponse, type DatabasePlace } from './errors.ts';
import { urlSetting } from './values.ts';

/** The table every command uses unless TABLE_NAME names another (docs/contract.md, section 8). */
export const DEFAULT_TABLE = 'team-resources';

/** The settings that name an endpoint, in the order they count: ours, then the SDK's own two. */
const ENDPOINT_SETTINGS = ['DYNAMODB_ENDPOINT', 'AWS_ENDPOINT_URL_DYNAMODB', 'AWS_ENDPOINT_URL'] as const;
/** The requests that write items (creating a table writes none). */
const WRITES = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'BatchWriteItemCommand',
  'TransactWriteItemsCommand',
]);
/** Hosts of AWS's own endpoints: commercial regions, China, and the dual-stack names. */
const AWS_HOST = /\.(amazonaws\.com|amazonaws\.com\.cn|api\.aws)$/;

/**
 * The endpoint a command really calls (docs/contract.md, section 7): the first of DYNAMODB_ENDPOINT,
 * AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL that is set, else AWS's regional endpoint. It is
 * on AWS when none is set or its host is one of AWS's. A value that is not an http(s) URL is a
 * malformed setting, named.
 */
export function databaseEndpoint(env: NodeJS.ProcessEnv = process.env) {
  for (const setting of ENDPOINT_SETTINGS) {
    const endpoint = urlSetting(setting, env);
    if (endpoint === undefined) continue;
    const host = new URL(endpoint).hostname.toLowerCase().replace(/\.$/, '');
    return { endpoint, setting, onAws: AWS_HOST.test(host) };
  }
  return { endpoint: undefined, setting: undefined, onAws: true };
}

/**
 * The commands' DynamoDB clients, and where they are: TABLE_NAME (default team-resources) at the
 * endpoint databaseEndpoint names, passed to the SDK as it is (the SDK's own configured endpoints
 * are not looked up again, so what is called is what the messages name). A local endpoint given by
 * DYNAMODB_ENDPOINT gets DynamoDB Local's credentials; AWS's, the default credential chain.
 *
 * Two clients on the same settings (https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html):
 * `doc` in the SDK's standard retry mode, for everything a command asks one request at a time; and
 * `bulk` in its adaptive mode, for the long streams of writes to one partition key (a list written
 * whole, a replaced generation swept: shared/write/writer.ts), which DynamoDB throttles at 1,000
 * write units a second. Adaptive mode adds client-side rate limiting to the standard retries, so
 * that a writer far faster than one partition key paces itself to what the key takes instead of
 * spending its retries; AWS recommends it only for a client that reaches one throttled resource,
 * since it would delay a shared client's requests to other resources too.
 *
 * Each waits as long as DynamoDB keeps answering (8 attempts for throttling and failed calls), but
 * 10 s without a byte, before a response or in the middle of one, ends the command with NoResponse
 * naming the endpoint, instead of being retried for minutes. Every other error is tagged with the
 * place, so the command's message names it too.
 */
export function databaseClient(startedHere = false) {
  const tableName = process.env.TABLE_NAME?.trim() || DEFAULT_TABLE;
  const { endpoint, setting, onAws } = databaseEndpoint();
  const place: DatabasePlace = { tableName, endpoint, setting, onAws, startedHere };
  const localKeys = setting === 'DYNAMODB_ENDPOINT' && !onAws;
  /** Write requests sent so far: an import that sent none wrote nothing. */
  let writesSent = 0;

  function newClient(retryMode: 'standard' | 'adaptive') {
    const client = new DynamoDBClient({
      endpoint,
      ignoreConfiguredEndpointUrls: true,
      region: process.env.AWS_REGION || (onAws ? undefined : 'local'),
      // DynamoDB Local keeps a database per access key and region; AWS uses the default chain.
      credentials: localKeys ? { accessKeyId: 'local', secretAccessKey: 'local' } : undefined,
      maxAttempts: 8,
      retryMode,
      // The socket's inactivity, before the response and while its body comes: smithy's own timers.
      requestHandler: new NodeHttpHandler({ connectionTimeout: NO_RESPONSE_MS, socketTimeout: NO_RESPONSE_MS }),
    });
    client.middlewareStack.add(
      (next, context) =>
        async function nameThePlace(args) {
          await resolvedPlace();
          if (WRITES.has(context.commandName ?? '')) writesSent++;
          try {
            return await next(args);
          } catch (error) {
            if (error instanceof Error) databaseErrors.set(error, place);
            throw error;
          }
        },
      { step: 'initialize', priority: 'high', name: 'databasePlace' },
    );
    // Inside the retry step, around reading the response: silence is said at once, not retried.
    client.middlewareStack.add(
      (next) =>
        async function silenceIsNoResponse(args) {
          try {
            return await next(args);
          } catch (error) {
            throw isSilence(error) ? new NoResponse(place) : error;
          }
        },
      { step: 'deserialize', priority: 'high', name: 'databaseSilence' },
    );
    return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  }
  const doc = newClient('standard');
  const bulk = newClient('adaptive');

  /** The place with AWS's region and regional endpoint filled in, once the SDK has resolved them. */
  async function resolvedPlace(): Promise<DatabasePlace> {
    if (endpoint || place.region) return place;
    place.region = await doc.config.region().catch(() => undefined);
    if (place.region) {
      const { url } = doc.config.endpointProvider({
        Region: place.region,
        UseFIPS: await doc.config.useFipsEndpoint(),
        UseDualStack: await doc.config.useDualstackEndpoint(),
      });
      place.endpoint = url.href.replace(/\/$/, '');
    }
    return place;
  }

  return { doc, bulk, tableName, place, resolvedPlace, writesSent: () => writesSent };
}
