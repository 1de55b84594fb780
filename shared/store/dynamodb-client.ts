import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';

export interface ClientOptions {
  /** A DynamoDB-compatible endpoint (DynamoDB Local); unset means AWS. */
  endpoint?: string;
  region?: string;
  /** Per-attempt limits; the API's defaults keep two sequential calls inside the Lambda timeout. */
  connectionTimeoutMs?: number;
  requestTimeoutMs?: number;
  maxAttempts?: number;
}

/**
 * The API functions' per-attempt limits: a request makes at most two DynamoDB calls one after
 * the other, each at most 2 attempts of (connect 500 ms + answer 1.5 s), well inside the
 * function's timeout; the request deadline aborts anything later. The benchmark's bare handlers
 * build their client with these too, so that they differ from a function only in its own code.
 */
export const API_CLIENT_LIMITS = { connectionTimeoutMs: 500, requestTimeoutMs: 1_500, maxAttempts: 2 } as const satisfies ClientOptions;

/**
 * The longest one call through a client with API_CLIENT_LIMITS can take on its own: every attempt
 * (connect, then the answer, each with its own timer) plus the SDK's delay before its retry (at
 * most 2^1 × 500 ms, its base for throttling). The reader sends a call without an abort signal
 * when it ends before the request's deadline anyway (shared/deadline.ts).
 */
export const API_CALL_BOUND_MS = API_CLIENT_LIMITS.maxAttempts * (API_CLIENT_LIMITS.connectionTimeoutMs + API_CLIENT_LIMITS.requestTimeoutMs) + 1_000;

/** The SDK's own name for its logger step, in a client's middleware stack. */
const SDK_LOGGER_STEP = 'loggerMiddleware';

/**
 * The plain DynamoDB client. The API functions use it as it is (their reader decodes the few
 * attributes it reads, so they bundle no document client); the tools wrap it (commands/cli/table.ts).
 * Timeouts and retries are set on purpose: the SDK's defaults (no request timeout) would let a
 * hung connection outlive the function.
 */
export function createDynamoDbClient(options: ClientOptions = {}): DynamoDBClient {
  const local = options.endpoint !== undefined;
  const client = new DynamoDBClient({
    endpoint: options.endpoint,
    region: options.region ?? process.env.AWS_REGION ?? (local ? 'local' : undefined),
    // DynamoDB Local accepts any credentials; AWS uses the default chain.
    credentials: local ? { accessKeyId: 'local', secretAccessKey: 'local' } : undefined,
    maxAttempts: options.maxAttempts ?? 3,
    requestHandler: new NodeHttpHandler({
      connectionTimeout: options.connectionTimeoutMs ?? 1_000,
      requestTimeout: options.requestTimeoutMs ?? 2_000,
      // Without this the handler only warns when requestTimeout passes, and a stalled
      // DynamoDB holds the request until the function's own deadline.
      throwOnRequestTimeout: true,
    }),
  });
  // The SDK's logger step copies each call's input and output through the sensitive-data filter
  // of the operation's schema, every item of a page included, to hand them to the client's logger,
  // even when that logger is the SDK's no-op default, as here: no client here is given one. It
  // cost a warm list request 100 to 200 µs of CPU, about 6% of its time (bench/README.md).
  client.middlewareStack.remove(SDK_LOGGER_STEP);
  return client;
}
