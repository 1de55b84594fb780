import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { jsonResponse } from './response.ts';

/**
 * Every error the API answers with, and the one place that turns an error into a response.
 * Anything that is not a deliberate HttpError becomes a bare 500: nothing internal leaks.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(status: number, body: Record<string, unknown> & { message: string }, headers: Record<string, string> = {}) {
    super(body.message);
    this.name = 'HttpError';
    this.status = status;
    this.body = body;
    this.headers = headers;
  }
}

export const unauthenticated = () =>
  new HttpError(401, { message: 'Unauthenticated.' }, { 'WWW-Authenticate': 'Bearer' });

export const missingAbility = (ability: string) =>
  new HttpError(403, {
    message: `This token does not have the ${ability} ability.`,
    code: 'insufficient_permission',
    missing_permissions: [ability],
  });

export const notFound = () => new HttpError(404, { message: 'Not Found' });

/** Laravel's 422: the first message, "(and N more errors)", and every message by field. */
export function validationFailed(errors: Record<string, string[]>): HttpError {
  const messages = Object.values(errors).flat();
  const more = messages.length - 1;
  const suffix = more === 0 ? '' : ` (and ${more} more error${more === 1 ? '' : 's'})`;
  return new HttpError(422, { message: `${messages[0]}${suffix}`, errors });
}

export const serviceUnavailable = () =>
  new HttpError(503, { message: 'Service Unavailable' }, { 'Retry-After': '1' });

export const serverError = () => new HttpError(500, { message: 'Server Error' });

// What the SDK throws when DynamoDB is throttled, unreachable or too slow: the caller may retry.
const TRANSIENT_NAMES = new Set([
  'ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded',
  'InternalServerError', 'ServiceUnavailable', 'ServiceUnavailableException',
  'TimeoutError', 'RequestTimeout', 'RequestTimeoutException', 'AbortError',
  'LeftUnprocessed', // shared/store/retry.ts: a batch still throttled when the retries ran out
]);
const TRANSIENT_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN',
  'ECONNABORTED', 'UND_ERR_SOCKET',
]);

export function isTransientStoreError(error: unknown): boolean {
  // Walk the cause chain, which may loop, a bounded number of steps.
  const seen = new Set<unknown>();
  for (let current = error; typeof current === 'object' && current !== null && !seen.has(current) && seen.size < 10; ) {
    seen.add(current);
    const e = current as { name?: string; code?: string; $metadata?: { httpStatusCode?: number }; cause?: unknown };
    if (TRANSIENT_NAMES.has(e.name ?? '') || TRANSIENT_CODES.has(e.code ?? '')) return true;
    if ((e.$metadata?.httpStatusCode ?? 0) >= 500) return true;
    current = e.cause;
  }
  return false;
}

/** Maps any error to its contract response. */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  return isTransientStoreError(error) ? serviceUnavailable() : serverError();
}

export function errorResponse(error: HttpError): APIGatewayProxyStructuredResultV2 {
  return jsonResponse(error.status, JSON.stringify(error.body), error.headers);
}
