/**
 * The ways a command ends badly (docs/contract.md, section 8): a usage error exits 2, a failure
 * exits 1 with a message that says why. Commands throw these; runCommand (run.ts) prints and exits.
 */

/** The command line is wrong: an unknown flag, a missing or malformed value, a file that cannot be read. */
export class UsageError extends Error {}

/** A setting in the environment is malformed (DYNAMODB_ENDPOINT that is no URL): exit 2, one line alone. */
export class SettingError extends UsageError {}

/** The command could not do its work; an empty message means the reason was printed already. */
export class Failure extends Error {}

export function usageError(message: string): never {
  throw new UsageError(message);
}

export function fail(message = ''): never {
  throw new Failure(message);
}

/** Where a command's DynamoDB is, as its messages name it (commands/cli/database.ts). */
export interface DatabasePlace {
  tableName: string;
  /** The endpoint called; for AWS's regional endpoint, known once the SDK has resolved the region. */
  endpoint?: string;
  /** The setting that names the endpoint; none for AWS's regional endpoint. */
  setting?: 'DYNAMODB_ENDPOINT' | 'AWS_ENDPOINT_URL_DYNAMODB' | 'AWS_ENDPOINT_URL';
  /** The endpoint is AWS's own (docs/contract.md, section 7). */
  onAws: boolean;
  /** The endpoint is a DynamoDB Local this command started. */
  startedHere?: boolean;
  /** The AWS region the client resolved (AWS's regional endpoint only). */
  region?: string;
}

/** How long a command waits for DynamoDB to send anything before it says so. */
export const NO_RESPONSE_MS = 10_000;

/** The endpoint and table, as every message names them. */
export function placeText(place: DatabasePlace): string {
  const table = `table ${place.tableName}`;
  if (place.startedHere) return `DynamoDB Local at ${place.endpoint}, ${table}`;
  if (place.setting) return `${place.setting}=${place.endpoint}, ${table}`;
  if (!place.endpoint) return `AWS, no region set, ${table}`;
  return `AWS at ${place.endpoint} (region ${place.region}), ${table}`;
}

function checkHint(place: DatabasePlace): string {
  if (!place.setting) {
    return 'check AWS_REGION, the network and the AWS credentials (or set DYNAMODB_ENDPOINT for a local endpoint)';
  }
  if (place.onAws) return `check ${place.setting}, the network and the AWS credentials`;
  return `check that ${place.setting} points at a running DynamoDB-compatible endpoint`;
}

/** DynamoDB sent nothing for NO_RESPONSE_MS: not retried, reported at once. */
export class NoResponse extends Error {
  constructor(place: DatabasePlace) {
    super(`no response from DynamoDB for ${NO_RESPONSE_MS / 1000} s (${placeText(place)}): ${checkHint(place)}`);
  }
}

/**
 * Whether the SDK's error is the silence its own timers measured (connectionTimeout, socketTimeout:
 * a TimeoutError without a code). smithy also names a refused or dropped connection (ECONNRESET,
 * EPIPE) a TimeoutError so that it is retried; those are said as what they are.
 */
export function isSilence(error: unknown): boolean {
  return (error as Error).name === 'TimeoutError' && (error as { code?: string }).code === undefined;
}

/** The errors the commands' DynamoDB client threw, with where it was, so that they are reported naming it. */
export const databaseErrors = new WeakMap<object, DatabasePlace>();
/** What a connection error code says happened, in an operator's words. */
const CONNECTION_FAILURES: Record<string, string> = {
  ECONNREFUSED: 'nothing accepts connections there (ECONNREFUSED)',
  ECONNRESET: 'the connection was dropped before an answer (ECONNRESET)',
  EPIPE: 'the connection was dropped before an answer (EPIPE)',
  ENOTFOUND: 'the host name is not known (ENOTFOUND)',
  EAI_AGAIN: 'the host name could not be looked up (EAI_AGAIN)',
  EHOSTUNREACH: 'the host is unreachable (EHOSTUNREACH)',
  ENETUNREACH: 'the network is unreachable (ENETUNREACH)',
};
const TLS_FAILURE = /^EPROTO$|^ERR_(SSL|TLS)_|CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)/;
/** What the SDK appends to an error whose response it could not read: of no use to an operator. */
const SDK_NOTE = /\s*Deserialization error: to see the raw response[\s\S]*$/;
const NO_REGION = 'no AWS region is set: set AWS_REGION (or DYNAMODB_ENDPOINT for a local endpoint)';
const CREDENTIALS_HINT = 'configure the AWS default credential chain, or set DYNAMODB_ENDPOINT for a local endpoint';

/** The operator's message for an error a DynamoDB call threw, or undefined if it is not one. */
export function describeDatabaseError(error: unknown): string | undefined {
  if (error instanceof NoResponse) return error.message;
  const place = error instanceof Error ? databaseErrors.get(error) : undefined;
  if (!place) return undefined;
  const { name, message, code, $response, $metadata } = error as Error & {
    code?: string;
    $response?: unknown;
    $metadata?: { httpStatusCode?: number };
  };
  const where = placeText(place);
  const hint = checkHint(place);
  if (!place.endpoint || message === 'Region is missing') return NO_REGION;
  if (code && CONNECTION_FAILURES[code])
    return `cannot reach DynamoDB (${where}): ${CONNECTION_FAILURES[code]}: ${hint}`;
  // OpenSSL's own text (its source file and line) says nothing an operator can act on.
  if (code && TLS_FAILURE.test(code)) {
    const failed = `the TLS connection failed (${code}; an http endpoint written as https?)`;
    return `cannot reach DynamoDB (${where}): ${failed}: ${hint}`;
  }
  if (
    $response !== undefined &&
    (name === 'SyntaxError' || SDK_NOTE.test(message) || name === 'Unknown' || message === 'UnknownError')
  ) {
    // An HTTP answer that is not DynamoDB's JSON (a web server's page, a JSON error without a type).
    const status = $metadata?.httpStatusCode ? `; HTTP ${$metadata.httpStatusCode}` : '';
    return `the endpoint did not answer as DynamoDB does (${where}${status}): ${hint}`;
  }
  if (name === 'ResourceNotFoundException') return `the table does not exist (${where}): check TABLE_NAME`;
  if (name === 'CredentialsProviderError' || (/credential/i.test(message) && place.onAws))
    return `no usable AWS credentials (${where}): ${message} (${CREDENTIALS_HINT})`;
  return `DynamoDB failed (${where}): ${name}: ${message.replace(SDK_NOTE, '')}`;
}
