import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Readable, Transform } from 'node:stream';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { NO_RESPONSE_MS, NoResponse, tagDatabaseError, type DatabasePlace } from './errors.ts';
import { endpointSetting } from './values.ts';

/** The table every command uses unless TABLE_NAME names another (docs/contract.md, section 8). */
export const DEFAULT_TABLE = 'team-resources';

export interface CommandTable {
  tableName: string;
  /** DYNAMODB_ENDPOINT (or the endpoint given); undefined means AWS. */
  endpoint?: string;
  doc: DynamoDBDocumentClient;
  /** Where the table is, as error messages name it. */
  place: DatabasePlace;
}

/**
 * The table and client a command works on: TABLE_NAME (default team-resources), at
 * DYNAMODB_ENDPOINT or in AWS through the default credential chain.
 *
 * The client waits as long as DynamoDB keeps answering (8 attempts for throttling and failed
 * calls), but a request that gets nothing for 10 s, before its response or in the middle of it,
 * ends the command with NoResponse, naming the endpoint, instead of being retried for minutes. Every other error it throws is
 * tagged with the place, so the command's message names it too.
 */
export function commandTable(options: { tableName?: string; endpoint?: string; startedHere?: boolean } = {}): CommandTable {
  const tableName = options.tableName ?? (process.env.TABLE_NAME?.trim() || DEFAULT_TABLE);
  const endpoint = options.endpoint ?? endpointSetting();
  const place: DatabasePlace = {
    tableName,
    endpoint,
    startedHere: options.startedHere,
    awsEndpointUrl: endpoint ? undefined : awsEndpointSetting(),
  };
  const client = new DynamoDBClient({
    endpoint,
    region: process.env.AWS_REGION || (endpoint ? 'local' : undefined),
    // DynamoDB Local accepts any credentials; AWS uses the default chain.
    credentials: endpoint ? { accessKeyId: 'local', secretAccessKey: 'local' } : undefined,
    maxAttempts: 8,
    requestHandler: new AnswerWatch(place),
  });
  client.middlewareStack.add(
    (next) => async function namePlace(args) {
      // The region the SDK resolved (AWS_REGION, or the profile's), for the messages.
      if (!endpoint) place.region ??= await client.config.region().catch(() => undefined);
      try {
        return await next(args);
      } catch (error) {
        tagDatabaseError(error, place);
        throw error;
      }
    },
    { step: 'initialize', priority: 'high', name: 'commandTablePlace' },
  );
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  return { tableName, endpoint, doc, place };
}

/** The SDK's own endpoint settings, as `NAME=value`, when one is set. */
function awsEndpointSetting(): string | undefined {
  const name = ['AWS_ENDPOINT_URL_DYNAMODB', 'AWS_ENDPOINT_URL'].find((n) => process.env[n]?.trim());
  return name && `${name}=${process.env[name]!.trim()}`;
}

/**
 * Node's HTTP handler with a watch on each attempt: no response (not even a status line) within
 * NO_RESPONSE_MS aborts it as NoResponse, which the SDK's retry strategy classes as a client
 * error and does not retry. Once the headers are in, the body is watched the same way: no byte of
 * it for NO_RESPONSE_MS (an endpoint that starts a response, then stalls) ends it as NoResponse
 * too. A slow body that keeps coming is waited on; the socket timeout stays only as a backstop.
 */
class AnswerWatch extends NodeHttpHandler {
  readonly #place: DatabasePlace;

  constructor(place: DatabasePlace) {
    super({ socketTimeout: NO_RESPONSE_MS + 5_000 });
    this.#place = place;
  }

  override async handle(...[request, options = {}]: Parameters<NodeHttpHandler['handle']>): ReturnType<NodeHttpHandler['handle']> {
    const silence = new AbortController();
    const timer = setTimeout(() => silence.abort(), NO_RESPONSE_MS);
    const abortSignal = options.abortSignal ? AbortSignal.any([options.abortSignal as AbortSignal, silence.signal]) : silence.signal;
    let answer: Awaited<ReturnType<NodeHttpHandler['handle']>>;
    try {
      answer = await super.handle(request, { ...options, abortSignal });
    } catch (error) {
      if (silence.signal.aborted) throw new NoResponse(this.#place);
      throw error;
    } finally {
      clearTimeout(timer);
    }
    const { body } = answer.response;
    if (body instanceof Readable) answer.response.body = silenceWatched(body, () => new NoResponse(this.#place));
    return answer;
  }
}

/** `body` as it arrives, ended with `silent()`'s error if no byte of it comes for NO_RESPONSE_MS. */
function silenceWatched(body: Readable, silent: () => Error): Readable {
  let timer: NodeJS.Timeout | undefined;
  const watched: Transform = new Transform({
    transform(chunk, _encoding, done) {
      arm();
      done(null, chunk);
    },
    flush(done) {
      clearTimeout(timer);
      done();
    },
  });
  function arm() {
    clearTimeout(timer);
    timer = setTimeout(() => {
      body.destroy();
      watched.destroy(silent());
    }, NO_RESPONSE_MS);
  }
  arm();
  watched.once('close', () => {
    clearTimeout(timer);
    // Dropped before its end (the SDK gave up on it): the response goes too, and its socket with it.
    if (!body.readableEnded) body.destroy();
  });
  body.once('error', (error) => watched.destroy(error));
  body.pipe(watched);
  return watched;
}
