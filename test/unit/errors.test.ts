import middy from '@middy/core';
import httpErrorHandler from '@middy/http-error-handler';
import { createError } from '@middy/util';
import type { APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parsePagination } from '../../shared/api/pagination.ts';
import {
  missingAbility,
  notFound,
  serverError,
  serviceUnavailable,
  toContractError,
  unauthenticated,
  validationFailed,
} from '../../shared/api/http/errors.ts';
import type { Logged } from '../../shared/api/http/context.ts';
import { contractErrors } from '../../shared/api/http/middleware/contract-errors.ts';
import { createLogger } from '../../shared/api/log.ts';

/**
 * The error handling (shared/api/http/middleware/contract-errors.ts: a classifier and
 * @middy/http-error-handler), on its own: a handler that throws, and the response the chain
 * makes of it. The bodies are the contract's, byte for byte.
 */
const context = {
  getRemainingTimeInMillis: () => 10_000,
  log: createLogger({ LOG_LEVEL: 'SILENT' }),
} as unknown as Context & Logged;

async function respond(thrown: unknown): Promise<APIGatewayProxyStructuredResultV2> {
  const handler = middy()
    .use(contractErrors())
    .handler(async () => {
      throw thrown;
    });
  return (await handler({}, context)) as APIGatewayProxyStructuredResultV2;
}

/** An error shaped like what the AWS SDK or Node's networking throws. */
function sdkError(name: string, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(`${name}: internal detail`), { name, ...extra });
}

const isJson = (headers: Record<string, unknown> | undefined) =>
  expect(String(headers?.['Content-Type'])).toMatch(/^application\/json(;|$)/);

afterEach(() => vi.restoreAllMocks());

describe('401 Unauthenticated', () => {
  it('answers 401 {"message":"Unauthenticated."} with WWW-Authenticate: Bearer', async () => {
    const response = await respond(unauthenticated());
    expect(response.statusCode).toBe(401);
    expect(response.body).toBe('{"message":"Unauthenticated."}');
    expect(response.headers?.['WWW-Authenticate']).toBe('Bearer');
    isJson(response.headers);
  });
});

describe('403 missing ability', () => {
  it.each(['finances:read', 'daemons:read', 'projects:read'])(
    'names the ability %s in the message and in missing_permissions',
    async (ability) => {
      const response = await respond(missingAbility(ability));
      expect(response.statusCode).toBe(403);
      expect(response.body).toBe(
        `{"message":"This token does not have the ${ability} ability.","code":"insufficient_permission","missing_permissions":["${ability}"]}`,
      );
      isJson(response.headers);
    },
  );
});

describe('404 Not Found', () => {
  it('answers 404 {"message":"Not Found"}', async () => {
    const response = await respond(notFound());
    expect(response.statusCode).toBe(404);
    expect(response.body).toBe('{"message":"Not Found"}');
    isJson(response.headers);
  });
});

describe('422 validation failed', () => {
  it('uses the only message as the message', () => {
    const error = validationFailed({ per_page: ['The per page field must not be greater than 50.'] });
    expect(error.statusCode).toBe(422);
    expect(JSON.parse(error.message)).toEqual({
      message: 'The per page field must not be greater than 50.',
      errors: { per_page: ['The per page field must not be greater than 50.'] },
    });
  });

  it('adds "(and 1 more error)" to the first of two messages', () => {
    const error = validationFailed({ per_page: ['A.'], page: ['B.'] });
    expect(JSON.parse(error.message).message).toBe('A. (and 1 more error)');
  });

  it('adds "(and N more errors)" to the first of more than two messages', () => {
    const error = validationFailed({ per_page: ['A.', 'B.'], page: ['C.'] });
    expect(JSON.parse(error.message).message).toBe('A. (and 2 more errors)');
  });

  it('writes message before errors, the fields in the order given', async () => {
    const response = await respond(validationFailed({ per_page: ['A.'], page: ['B.'] }));
    expect(response.statusCode).toBe(422);
    expect(response.body).toBe('{"message":"A. (and 1 more error)","errors":{"per_page":["A."],"page":["B."]}}');
    isJson(response.headers);
  });

  it('reports the pagination errors of per_page=51&page=0 as Laravel does', async () => {
    const parsed = parsePagination({ page: '0', per_page: '51' });
    if (parsed.ok) throw new Error('expected the query to be rejected');
    expect(JSON.parse((await respond(validationFailed(parsed.errors))).body ?? '')).toEqual({
      message: 'The per page field must not be greater than 50. (and 1 more error)',
      errors: {
        per_page: ['The per page field must not be greater than 50.'],
        page: ['The page field must be at least 1.'],
      },
    });
  });
});

describe('503 and 500', () => {
  it('answers 503 {"message":"Service Unavailable"} with Retry-After: 1', async () => {
    const response = await respond(serviceUnavailable());
    expect(response.statusCode).toBe(503);
    expect(response.body).toBe('{"message":"Service Unavailable"}');
    expect(response.headers?.['Retry-After']).toBe('1');
    isJson(response.headers);
  });

  it('answers 500 {"message":"Server Error"} without Retry-After', async () => {
    const response = await respond(serverError());
    expect(response.statusCode).toBe(500);
    expect(response.body).toBe('{"message":"Server Error"}');
    expect(response.headers).not.toHaveProperty('Retry-After');
    isJson(response.headers);
  });
});

describe('middy 7 traps the error handling avoids', () => {
  it('keeps WWW-Authenticate and Retry-After, which createError drops unless they are set on the error object', async () => {
    const plain = createError(401, '{"message":"Unauthenticated."}', { headers: { 'WWW-Authenticate': 'Bearer' } });
    expect(plain.headers).toBeUndefined();
    expect((await respond(unauthenticated())).headers?.['WWW-Authenticate']).toBe('Bearer');
    expect((await respond(serviceUnavailable())).headers?.['Retry-After']).toBe('1');
  });

  it('keeps the 503 body, which http-error-handler replaces unless the error says expose: true', async () => {
    const unexposed = middy()
      .use(httpErrorHandler({ logger: false, fallbackMessage: 'fallback' }))
      .handler(async () => {
        throw createError(503, '{"message":"Service Unavailable"}');
      });
    expect(((await unexposed({}, context)) as APIGatewayProxyStructuredResultV2).body).toBe('fallback');
    expect((await respond(serviceUnavailable())).body).toBe('{"message":"Service Unavailable"}');
  });

  it('answers the request deadline (AbortSignal.timeout) with the 503 before http-error-handler sees it', async () => {
    const signal = AbortSignal.timeout(0);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const response = await respond(signal.reason);
    expect(response.statusCode).toBe(503);
    expect(response.body).toBe('{"message":"Service Unavailable"}');
  });

  it('writes nothing to the console itself (logger: false): the access log records every request', async () => {
    const consoleError = vi.spyOn(console, 'error');
    await respond(new Error('boom'));
    await respond(notFound());
    expect(consoleError).not.toHaveBeenCalled();
  });

  it('answers an error thrown after the handler answered with the error, not the half-made response', async () => {
    const handler = middy()
      .use(contractErrors())
      .use({
        after: () => {
          throw new Error('after step failed');
        },
      })
      .handler(async () => ({ statusCode: 200, body: '{"data":[]}' }));
    const response = (await handler({}, context)) as APIGatewayProxyStructuredResultV2;
    expect(response.statusCode).toBe(500);
    expect(response.body).toBe('{"message":"Server Error"}');
  });
});

describe('errors that are not contract errors', () => {
  it('passes a deliberate contract error through unchanged', () => {
    const error = missingAbility('projects:read');
    expect(toContractError(error)).toBe(error);
  });

  it.each([['ProvisionedThroughputExceededException'], ['ThrottlingException'], ['RequestLimitExceeded']])(
    'answers 503 with Retry-After: 1 when DynamoDB is throttled (%s)',
    async (name) => {
      const response = await respond(sdkError(name, { $metadata: { httpStatusCode: 400 } }));
      expect(response.statusCode).toBe(503);
      expect(response.body).toBe('{"message":"Service Unavailable"}');
      expect(response.headers?.['Retry-After']).toBe('1');
    },
  );

  it.each([['TimeoutError'], ['AbortError'], ['RequestTimeout']])(
    'answers 503 when the database is too slow (%s)',
    async (name) => {
      expect((await respond(sdkError(name))).statusCode).toBe(503);
    },
  );

  it.each([['ECONNREFUSED'], ['ECONNRESET'], ['ETIMEDOUT'], ['ENOTFOUND'], ['EAI_AGAIN'], ['EHOSTUNREACH']])(
    'answers 503 when the database is unreachable (code %s)',
    async (code) => {
      expect((await respond(sdkError('Error', { code }))).statusCode).toBe(503);
    },
  );

  it('answers 503 when the database answers with a 5xx status', async () => {
    expect((await respond(sdkError('UnknownError', { $metadata: { httpStatusCode: 503 } }))).statusCode).toBe(503);
  });

  it('answers 503 when a batch is still throttled after every retry (LeftUnprocessed)', async () => {
    expect((await respond(sdkError('LeftUnprocessed'))).statusCode).toBe(503);
  });

  it('answers 503 when a connection error is the cause of the error thrown', async () => {
    const wrapped = new Error('request failed', { cause: sdkError('Error', { code: 'ECONNREFUSED' }) });
    expect((await respond(wrapped)).statusCode).toBe(503);
  });

  it('answers 503 when the connection error is two causes deep', async () => {
    const inner = new Error('socket', { cause: sdkError('Error', { code: 'ECONNRESET' }) });
    expect((await respond(new Error('outer', { cause: inner }))).statusCode).toBe(503);
  });

  it('answers a bare 500 to an ordinary error, without its message', async () => {
    const response = await respond(new Error('table acme-prod: key {pk: "TEAM#1"} at /var/task/index.js:12'));
    expect(response.statusCode).toBe(500);
    expect(response.body).toBe('{"message":"Server Error"}');
    expect(response.headers).not.toHaveProperty('Retry-After');
    expect(response.headers).not.toHaveProperty('WWW-Authenticate');
  });

  it('answers a bare 500 to an error that looks like an HTTP error but is not one of the contract', async () => {
    const response = await respond(Object.assign(new Error('internal detail'), { statusCode: 400, expose: true }));
    expect(response.statusCode).toBe(500);
    expect(response.body).toBe('{"message":"Server Error"}');
  });

  it('answers 500 to a TypeError from a bug', async () => {
    let thrown: unknown;
    try {
      (undefined as unknown as { x: () => void }).x();
    } catch (error) {
      thrown = error;
    }
    expect((await respond(thrown)).statusCode).toBe(500);
  });

  it.each([
    ['ValidationException', 400],
    ['ResourceNotFoundException', 400],
    ['AccessDeniedException', 400],
  ])('answers 500, not 503, to a DynamoDB %s (not worth retrying)', async (name, httpStatusCode) => {
    expect((await respond(sdkError(name, { $metadata: { httpStatusCode } }))).statusCode).toBe(500);
  });

  it.each([
    ['a string', 'boom'],
    ['null', null],
    ['undefined', undefined],
    ['a number', 42],
    ['a plain object', { message: 'detail' }],
  ])('answers 500 to %s thrown', async (_, thrown) => {
    const response = await respond(thrown);
    expect(response.statusCode).toBe(500);
    expect(response.body).toBe('{"message":"Server Error"}');
  });

  it('answers 500 to an error that is its own cause', async () => {
    const error = new Error('loop') as Error & { cause?: unknown };
    error.cause = error;
    expect((await respond(error)).statusCode).toBe(500);
  });
});

describe('errors whose causes form a loop', () => {
  it('maps them to a bare 500 instead of overflowing the stack', async () => {
    const a = new Error('a') as Error & { cause?: unknown };
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect((await respond(a)).statusCode).toBe(500);
  });

  it('still finds a transient cause a few links down', async () => {
    const root = Object.assign(new Error('socket'), { code: 'ECONNRESET' });
    expect((await respond(new Error('outer', { cause: new Error('middle', { cause: root }) }))).statusCode).toBe(503);
  });
});
