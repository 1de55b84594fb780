/**
 * The two ways a command ends badly, and the exit codes every command uses (docs/contract.md, section 8):
 * 0 done, 1 failed (the message says why), 2 usage error. Commands throw these; runCommand
 * (run.ts) prints them and exits, so no command calls process.exit itself.
 */
export const EXIT = { done: 0, failed: 1, usage: 2 } as const;

/** The command line is wrong: an unknown flag, a missing or malformed value, a file that cannot be read. Exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * A setting in the environment is malformed (DYNAMODB_ENDPOINT that is no URL): exit 2, like a
 * malformed option value, but one line alone, since the usage lines say nothing of the environment.
 */
export class SettingError extends UsageError {
  override name = 'SettingError';
}

/**
 * The command could not do its work. Exit 1. The message is for the operator and says why;
 * an empty message means the reason was printed already (a snapshot's list of problems).
 */
export class Failure extends Error {
  override name = 'Failure';
}

export function usageError(message: string): never {
  throw new UsageError(message);
}

export function fail(message = ''): never {
  throw new Failure(message);
}

/** Where a command's DynamoDB is, as the operator configured it. */
export interface DatabasePlace {
  tableName: string;
  /** DYNAMODB_ENDPOINT, when set, or the DynamoDB Local this command started. */
  endpoint?: string;
  /** The endpoint is a DynamoDB Local this command started (not the operator's DYNAMODB_ENDPOINT). */
  startedHere?: boolean;
  /** The AWS region the client resolved (AWS only). */
  region?: string;
  /** `AWS_ENDPOINT_URL_DYNAMODB=…` or `AWS_ENDPOINT_URL=…`, which the SDK honours in place of AWS's own endpoint. */
  awsEndpointUrl?: string;
}

/** How long a command waits for DynamoDB to send any response before it says so (docs/contract.md, section 8). */
export const NO_RESPONSE_MS = 10_000;

/** `DYNAMODB_ENDPOINT=http://…, table t` or `AWS region eu-west-1, table t`. */
function placeText(place: DatabasePlace): string {
  if (place.endpoint) return `${place.startedHere ? 'DynamoDB Local at ' : 'DYNAMODB_ENDPOINT='}${place.endpoint}, table ${place.tableName}`;
  const via = place.awsEndpointUrl ? ` at ${place.awsEndpointUrl}` : '';
  return `AWS region ${place.region ?? '(none set)'}${via}, table ${place.tableName}`;
}

function checkHint(place: DatabasePlace): string {
  return place.endpoint
    ? 'check that DYNAMODB_ENDPOINT points at a running DynamoDB-compatible endpoint'
    : 'check AWS_REGION, the network and the AWS credentials (or set DYNAMODB_ENDPOINT for a local endpoint)';
}

/** DynamoDB sent nothing at all for NO_RESPONSE_MS: not retried, reported at once. */
export class NoResponse extends Error {
  override name = 'NoResponse';
  /** The operator's line, kept apart: the SDK appends its own text to `message` when a body fails. */
  readonly report: string;
  constructor(place: DatabasePlace) {
    const report = `no response from DynamoDB for ${NO_RESPONSE_MS / 1000} s (${placeText(place)}): ${checkHint(place)}`;
    super(report);
    this.report = report;
  }
}

const PLACE = Symbol('database place');
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ETIMEDOUT']);

/** Errors of the TLS handshake: a protocol mismatch, or a certificate that is not accepted. */
function isTlsFailure(code: string): boolean {
  return code === 'EPROTO' || code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)/.test(code);
}

/** Marks an error as coming from the command's DynamoDB client, so it is reported with the place. */
export function tagDatabaseError(error: unknown, place: DatabasePlace): void {
  if (error instanceof Error && !(error instanceof NoResponse)) Object.defineProperty(error, PLACE, { value: place });
}

/** The operator's message for an error a DynamoDB call threw, or undefined if it is not one. */
export function describeDatabaseError(error: unknown): string | undefined {
  if (error instanceof NoResponse) return error.report;
  const place = (error as { [PLACE]?: DatabasePlace } | undefined)?.[PLACE];
  if (!place) return undefined;
  const { name, message, code } = error as Error & { code?: string };
  const where = placeText(place);
  if (!place.endpoint && !place.region) return `no AWS region is set: set AWS_REGION (or DYNAMODB_ENDPOINT for a local endpoint)`;
  if (code && UNREACHABLE.has(code)) return `cannot reach DynamoDB (${where}): ${code}: ${checkHint(place)}`;
  if (name === 'TimeoutError') return `cannot reach DynamoDB (${where}): ${message}: ${checkHint(place)}`;
  if (code && isTlsFailure(code)) {
    // OpenSSL's own text (its source file and line) says nothing an operator can act on.
    return `cannot reach DynamoDB (${where}): the TLS connection failed (${code}; an http endpoint written as https?): ${checkHint(place)}`;
  }
  const answered = (error as { $response?: unknown }).$response !== undefined;
  if (answered && (name === 'SyntaxError' || DESERIALIZATION.test(message) || name === 'Unknown' || message === 'UnknownError')) {
    // An HTTP answer that is not DynamoDB's JSON (a web server's page, a JSON error without a type).
    const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    return `the endpoint did not answer as DynamoDB does (${where}${status ? `; HTTP ${status}` : ''}): ${checkHint(place)}`;
  }
  if (name === 'ResourceNotFoundException') return `the table does not exist (${where}): check TABLE_NAME`;
  if (name === 'CredentialsProviderError' || /credential/i.test(message) && !place.endpoint) {
    return `no usable AWS credentials (${where}): ${message} (configure the AWS default credential chain, or set DYNAMODB_ENDPOINT for a local endpoint)`;
  }
  return `DynamoDB failed (${where}): ${name}: ${withoutSdkNote(message)}`;
}

/** What the SDK appends to an error whose response it could not read: of no use to an operator. */
const DESERIALIZATION = /\s*Deserialization error: to see the raw response, inspect the hidden field[\s\S]*$/;

function withoutSdkNote(message: string): string {
  return message.replace(DESERIALIZATION, '');
}
