import { DynamoDBClient } from '@aws-sdk/client-dynamodb';

interface ClientOptions {
  /** A DynamoDB-compatible endpoint (DynamoDB Local); unset means AWS. */
  endpoint?: string;
  /** Per-attempt limits (smithy's connectionTimeout and requestTimeout) and the SDK's attempts. */
  connectionTimeoutMs?: number;
  requestTimeoutMs?: number;
  maxAttempts?: number;
  /**
   * The SDK's retry mode: standard (default), or adaptive for a client that writes one throttled key
   * (shared/write/writer.ts).
   */
  retryMode?: 'standard' | 'adaptive';
}

/**
 * The plain DynamoDB client. Timeouts and retries are set on purpose: the SDK's defaults (no
 * request timeout) would let a hung connection outlive the function. The defaults are the API
 * functions' limits: each call makes at most 2 attempts of (connect 0.5 s + answer 1.5 s), so a
 * request's one or two calls end well inside its 8 s wait on the database (function-settings.ts),
 * and a stalled DynamoDB is reported as a 503 rather than waited out.
 */
export function createDynamoDbClient({
  endpoint,
  connectionTimeoutMs = 500,
  requestTimeoutMs = 1_500,
  maxAttempts = 2,
  retryMode,
}: ClientOptions = {}): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    // DynamoDB Local accepts any credentials; AWS uses the default chain (and AWS_REGION).
    ...(endpoint && {
      region: process.env.AWS_REGION ?? 'local',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    }),
    maxAttempts,
    ...(retryMode && { retryMode }),
    // Without throwOnRequestTimeout the handler only warns when requestTimeout passes, and the call waits on.
    requestHandler: {
      connectionTimeout: connectionTimeoutMs,
      requestTimeout: requestTimeoutMs,
      throwOnRequestTimeout: true,
    },
  });
}
