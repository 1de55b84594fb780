import { createError, type HttpError } from '@middy/util';
import { JSON_CONTENT_TYPE } from './response.ts';

/**
 * Every error the API answers with (docs/contract.md, section 2), in one place, as middy HTTP errors that
 * @middy/http-error-handler turns into responses (the chain is in handlers.ts). Each carries its
 * contract body as JSON text in `message`, `expose: true` so a 5xx keeps its body, and its headers
 * on the error object: middy's createError keeps neither custom headers nor (for 5xx) the body.
 */
export type ContractError = HttpError & { headers: Record<string, string> };

function contractError(status: number, body: { message: string } & Record<string, unknown>, headers: Record<string, string> = {}): ContractError {
  const error = createError(status, JSON.stringify(body), { expose: true }) as ContractError;
  error.headers = { 'Content-Type': JSON_CONTENT_TYPE, ...headers };
  return error;
}

export const unauthenticated = () => contractError(401, { message: 'Unauthenticated.' }, { 'WWW-Authenticate': 'Bearer' });

export const missingAbility = (ability: string) =>
  contractError(403, {
    message: `This token does not have the ${ability} ability.`,
    code: 'insufficient_permission',
    missing_permissions: [ability],
  });

export const notFound = () => contractError(404, { message: 'Not Found' });

/** Laravel's 422: the first message, "(and N more errors)", and every message by field. */
export function validationFailed(errors: Record<string, string[]>): ContractError {
  const messages = Object.values(errors).flat();
  const more = messages.length - 1;
  const suffix = more === 0 ? '' : ` (and ${more} more error${more === 1 ? '' : 's'})`;
  return contractError(422, { message: `${messages[0]}${suffix}`, errors });
}

export const serviceUnavailable = () => contractError(503, { message: 'Service Unavailable' }, { 'Retry-After': '1' });

/** The bare 500: nothing of the error that caused it. Also the error handler's fallback body. */
export const SERVER_ERROR_BODY = '{"message":"Server Error"}';
export const serverError = () => contractError(500, { message: 'Server Error' });

export function isContractError(error: unknown): error is ContractError {
  const e = error as Partial<ContractError> | null;
  return e?.expose === true && typeof e.statusCode === 'number' && typeof e.headers === 'object';
}

/** What the SDK and Node throw when DynamoDB is throttled, unreachable or too slow: the caller may retry. */
const TRANSIENT = new Set([
  'ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded',
  'InternalServerError', 'ServiceUnavailable', 'ServiceUnavailableException',
  'TimeoutError', 'RequestTimeout', 'RequestTimeoutException', 'AbortError',
  'LeftUnprocessed', // shared/store/retry.ts: a batch still throttled when the retries ran out
  'ShortPage', // shared/store/team-reader.ts: a page short of what its head promised, even read again
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED',
]);

/** Whether the error, or one of its first few causes (a chain may loop), is a transient one. */
function isTransientStoreError(error: unknown): boolean {
  let current = error as { name?: string; code?: string; $metadata?: { httpStatusCode?: number }; cause?: unknown } | null | undefined;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++, current = current.cause as typeof current) {
    if (TRANSIENT.has(current.name!) || TRANSIENT.has(current.code!) || (current.$metadata?.httpStatusCode ?? 0) >= 500) return true;
  }
  return false;
}

/**
 * The contract error any thrown value answers with: a contract error as it is, DynamoDB being
 * throttled, unreachable or too slow as 503, anything else as the bare 500.
 */
export function toContractError(error: unknown): ContractError {
  if (isContractError(error)) return error;
  return isTransientStoreError(error) ? serviceUnavailable() : serverError();
}
