import { createError, HttpError } from '@middy/util';
import { isThrottlingError, isTransientError } from '@smithy/core/retry';
import { JSON_CONTENT_TYPE } from './envelope.ts';

/**
 * Every error the API answers with (docs/contract.md, section 2), in one place, as middy HTTP errors that
 * @middy/http-error-handler turns into responses (the chain is in handlers.ts). Each carries its
 * contract body as JSON text in `message`, `expose: true` so a 5xx keeps its body, and its headers
 * on the error object: middy's createError keeps neither custom headers nor (for 5xx) the body.
 */
type ContractError = HttpError & { headers: Record<string, string> };

function contractError(
  status: number,
  body: { message: string } & Record<string, unknown>,
  headers: Record<string, string> = {},
): ContractError {
  return Object.assign(createError(status, JSON.stringify(body), { expose: true }), {
    headers: { 'Content-Type': JSON_CONTENT_TYPE, ...headers },
  });
}

export const unauthenticated = () =>
  contractError(401, { message: 'Unauthenticated.' }, { 'WWW-Authenticate': 'Bearer' });

export const missingAbility = (ability: string) =>
  contractError(403, {
    message: `This token does not have the ${ability} ability.`,
    code: 'insufficient_permission',
    missing_permissions: [ability],
  });

export const notFound = () => contractError(404, { message: 'Not Found' });

/** Laravel's 422: the first message, "(and N more errors)", and every message by field. */
export function validationFailed(errors: Record<string, string[]>): ContractError {
  const more = Object.values(errors).flat().length - 1;
  const suffix = more === 0 ? '' : ` (and ${more} more error${more === 1 ? '' : 's'})`;
  return contractError(422, { message: `${Object.values(errors)[0]![0]}${suffix}`, errors });
}

export const serviceUnavailable = () => contractError(503, { message: 'Service Unavailable' }, { 'Retry-After': '1' });

/** The bare 500: nothing of the error that caused it. */
export const serverError = () => contractError(500, { message: 'Server Error' });

/** Only this module makes HTTP errors: any other error is an accident, answered 500 or 503. */
export const isContractError = (error: unknown): error is ContractError => error instanceof HttpError;

/**
 * Ours besides the SDK's own classification: a call abandoned at the request's deadline, a batch
 * still throttled when its retries ran out (store/retry.ts), a page short of what its head
 * promised even read again (store/team-reader.ts).
 */
const GAVE_UP = ['AbortError', 'LeftUnprocessed', 'ShortPage'];

/**
 * The contract error any thrown value answers with: a contract error as it is; DynamoDB
 * throttled, unreachable or too slow (as the SDK's retry strategy classifies errors) as 503;
 * anything else as the bare 500.
 */
export function toContractError(error: unknown): ContractError {
  if (isContractError(error)) return error;
  if (!(error instanceof Object)) return serverError();
  const e = error as Parameters<typeof isTransientError>[0];
  return GAVE_UP.includes(e.name) || isThrottlingError(e) || isTransientError(e) ? serviceUnavailable() : serverError();
}
