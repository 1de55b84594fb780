import { describe, expect, it } from 'vitest';
import { parsePagination } from '../../shared/domain/pagination.ts';
import {
  errorResponse,
  HttpError,
  missingAbility,
  notFound,
  serverError,
  serviceUnavailable,
  toHttpError,
  unauthenticated,
  validationFailed,
} from '../../shared/http/errors.ts';

/** An error shaped like what the AWS SDK or Node's networking throws. */
function sdkError(name: string, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(`${name}: internal detail`), { name, ...extra });
}

const isJson = (headers: Record<string, unknown> | undefined) =>
  expect(String(headers?.['Content-Type'])).toMatch(/^application\/json(;|$)/);

describe('401 Unauthenticated', () => {
  it('answers 401 {"message":"Unauthenticated."} with WWW-Authenticate: Bearer', () => {
    const response = errorResponse(unauthenticated());
    expect(response.statusCode).toBe(401);
    expect(response.body).toBe('{"message":"Unauthenticated."}');
    expect(response.headers?.['WWW-Authenticate']).toBe('Bearer');
    isJson(response.headers);
  });
});

describe('403 missing ability', () => {
  it.each(['finances:read', 'daemons:read', 'projects:read'])('names the ability %s in the message and in missing_permissions', (ability) => {
    const response = errorResponse(missingAbility(ability));
    expect(response.statusCode).toBe(403);
    expect(response.body).toBe(
      `{"message":"This token does not have the ${ability} ability.","code":"insufficient_permission","missing_permissions":["${ability}"]}`,
    );
    isJson(response.headers);
  });
});

describe('404 Not Found', () => {
  it('answers 404 {"message":"Not Found"}', () => {
    const response = errorResponse(notFound());
    expect(response.statusCode).toBe(404);
    expect(response.body).toBe('{"message":"Not Found"}');
    isJson(response.headers);
  });
});

describe('422 validation failed', () => {
  it('uses the only message as the message', () => {
    const error = validationFailed({ per_page: ['The per page field must not be greater than 50.'] });
    expect(error.status).toBe(422);
    expect(error.body).toEqual({
      message: 'The per page field must not be greater than 50.',
      errors: { per_page: ['The per page field must not be greater than 50.'] },
    });
  });

  it('adds "(and 1 more error)" to the first of two messages', () => {
    const error = validationFailed({ per_page: ['A.'], page: ['B.'] });
    expect(error.body.message).toBe('A. (and 1 more error)');
  });

  it('adds "(and N more errors)" to the first of more than two messages', () => {
    const error = validationFailed({ per_page: ['A.', 'B.'], page: ['C.'] });
    expect(error.body.message).toBe('A. (and 2 more errors)');
  });

  it('writes message before errors, the fields in the order given', () => {
    const response = errorResponse(validationFailed({ per_page: ['A.'], page: ['B.'] }));
    expect(response.statusCode).toBe(422);
    expect(response.body).toBe('{"message":"A. (and 1 more error)","errors":{"per_page":["A."],"page":["B."]}}');
    isJson(response.headers);
  });

  it('reports the pagination errors of per_page=51&page=0 as Laravel does', () => {
    const parsed = parsePagination({ page: '0', per_page: '51' });
    if (parsed.ok) throw new Error('expected the query to be rejected');
    expect(JSON.parse(errorResponse(validationFailed(parsed.errors)).body ?? '')).toEqual({
      message: 'The per page field must not be greater than 50. (and 1 more error)',
      errors: {
        per_page: ['The per page field must not be greater than 50.'],
        page: ['The page field must be at least 1.'],
      },
    });
  });
});

describe('503 and 500', () => {
  it('answers 503 {"message":"Service Unavailable"} with Retry-After: 1', () => {
    const response = errorResponse(serviceUnavailable());
    expect(response.statusCode).toBe(503);
    expect(response.body).toBe('{"message":"Service Unavailable"}');
    expect(response.headers?.['Retry-After']).toBe('1');
    isJson(response.headers);
  });

  it('answers 500 {"message":"Server Error"} without Retry-After', () => {
    const response = errorResponse(serverError());
    expect(response.statusCode).toBe(500);
    expect(response.body).toBe('{"message":"Server Error"}');
    expect(response.headers).not.toHaveProperty('Retry-After');
    isJson(response.headers);
  });
});

describe('toHttpError', () => {
  it('passes a deliberate HttpError through unchanged', () => {
    const error = missingAbility('projects:read');
    expect(toHttpError(error)).toBe(error);
  });

  it.each([
    ['ProvisionedThroughputExceededException'],
    ['ThrottlingException'],
    ['RequestLimitExceeded'],
  ])('answers 503 with Retry-After: 1 when DynamoDB is throttled (%s)', (name) => {
    const error = toHttpError(sdkError(name, { $metadata: { httpStatusCode: 400 } }));
    expect(error.status).toBe(503);
    expect(error.body).toEqual({ message: 'Service Unavailable' });
    expect(error.headers).toEqual({ 'Retry-After': '1' });
  });

  it.each([['TimeoutError'], ['AbortError'], ['RequestTimeout']])('answers 503 when the database is too slow (%s)', (name) => {
    expect(toHttpError(sdkError(name)).status).toBe(503);
  });

  it.each([['ECONNREFUSED'], ['ECONNRESET'], ['ETIMEDOUT'], ['ENOTFOUND'], ['EAI_AGAIN'], ['EHOSTUNREACH']])(
    'answers 503 when the database is unreachable (code %s)',
    (code) => {
      expect(toHttpError(sdkError('Error', { code })).status).toBe(503);
    },
  );

  it('answers 503 when the database answers with a 5xx status', () => {
    expect(toHttpError(sdkError('UnknownError', { $metadata: { httpStatusCode: 503 } })).status).toBe(503);
  });

  it('answers 503 when a connection error is the cause of the error thrown', () => {
    const wrapped = new Error('request failed', { cause: sdkError('Error', { code: 'ECONNREFUSED' }) });
    expect(toHttpError(wrapped).status).toBe(503);
  });

  it('answers 503 when the connection error is two causes deep', () => {
    const inner = new Error('socket', { cause: sdkError('Error', { code: 'ECONNRESET' }) });
    expect(toHttpError(new Error('outer', { cause: inner })).status).toBe(503);
  });

  it('answers a bare 500 to an ordinary error, without its message', () => {
    const error = toHttpError(new Error('table acme-prod: key {pk: "TEAM#1"} at /var/task/index.js:12'));
    expect(error.status).toBe(500);
    expect(errorResponse(error).body).toBe('{"message":"Server Error"}');
    expect(error.headers).toEqual({});
  });

  it('answers 500 to a TypeError from a bug', () => {
    let thrown: unknown;
    try {
      (undefined as unknown as { x: () => void }).x();
    } catch (error) {
      thrown = error;
    }
    expect(toHttpError(thrown).status).toBe(500);
  });

  it.each([
    ['ValidationException', 400],
    ['ResourceNotFoundException', 400],
    ['AccessDeniedException', 400],
  ])('answers 500, not 503, to a DynamoDB %s (not worth retrying)', (name, httpStatusCode) => {
    expect(toHttpError(sdkError(name, { $metadata: { httpStatusCode } })).status).toBe(500);
  });

  it.each([
    ['a string', 'boom'],
    ['null', null],
    ['undefined', undefined],
    ['a number', 42],
    ['a plain object', { message: 'detail' }],
  ])('answers 500 to %s thrown', (_, thrown) => {
    expect(toHttpError(thrown).status).toBe(500);
  });

  it('answers 500 to an error that is its own cause', () => {
    const error = new Error('loop') as Error & { cause?: unknown };
    error.cause = error;
    expect(toHttpError(error).status).toBe(500);
  });

  it('returns an HttpError every time', () => {
    expect(toHttpError(new Error('x'))).toBeInstanceOf(HttpError);
  });
});

describe('errors whose causes form a loop', () => {
  it('maps them to a bare 500 instead of overflowing the stack', () => {
    const a = new Error('a') as Error & { cause?: unknown };
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect(toHttpError(a).status).toBe(500);
  });

  it('still finds a transient cause a few links down', () => {
    const root = Object.assign(new Error('socket'), { code: 'ECONNRESET' });
    expect(toHttpError(new Error('outer', { cause: new Error('middle', { cause: root }) })).status).toBe(503);
  });
});
