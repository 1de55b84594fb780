import { DynamoDBClient } from '@aws-sdk/client-dynamodb';

export interface ClientOptions {
  /** A DynamoDB-compatible endpoint (DynamoDB Local); unset means AWS. */
  endpoint?: string;
  region?: string;
  /** Per-attempt limits (smithy's connectionTimeout and requestTimeout) and the SDK's attempts. */
  connectionTimeoutMs?: number;
  requestTimeoutMs?: number;
  maxAttempts?: number;
}

/**
 * The API functions' limits: each call makes at most 2 attempts of (connect 0.5 s + answer
 * 1.5 s), so a request's one or two calls end well inside its 8 s wait on the database
 * (function-settings.ts), and a stalled DynamoDB is reported as a 503 rather than waited out.
 */
export const API_CLIENT_LIMITS = { connectionTimeoutMs: 500, requestTimeoutMs: 1_500, maxAttempts: 2 } as const satisfies ClientOptions;

/**
 * The plain DynamoDB client: the API functions use it as it is, the tools wrap it in a document
 * client (commands/store/document-client.ts). Timeouts and retries are set on purpose: the SDK's
 * defaults (no request timeout) would let a hung connection outlive the function.
 */
export function createDynamoDbClient(options: ClientOptions = {}): DynamoDBClient {
  const local = options.endpoint !== undefined;
  return new DynamoDBClient({
    endpoint: options.endpoint,
    region: options.region ?? process.env.AWS_REGION ?? (local ? 'local' : undefined),
    // DynamoDB Local accepts any credentials; AWS uses the default chain.
    credentials: local ? { accessKeyId: 'local', secretAccessKey: 'local' } : undefined,
    maxAttempts: options.maxAttempts ?? 3,
    requestHandler: {
      connectionTimeout: options.connectionTimeoutMs ?? 1_000,
      requestTimeout: options.requestTimeoutMs ?? 2_000,
      // Without it the handler only warns when requestTimeout passes, and the call waits on.
      throwOnRequestTimeout: true,
    },
  });
}
