import type { Request } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { Context, RequestContext } from '../../shared/api/http/context.ts';
import { isContractError } from '../../shared/api/http/errors.ts';
import { DatabaseUsage } from '../../shared/api/team-reader.ts';
import { monotonicMs } from '../../shared/api/clock.ts';
import { createLogger } from '../../shared/api/log.ts';

/**
 * Hand-built middy requests, for testing one middleware on its own: the event API Gateway (HTTP
 * API, payload 2.0) would send, the Lambda context with what earlier middlewares put on it, and
 * the response or error the later ones left.
 */
/** The context of a request once every middleware has run (each one adds its part). */
export type ApiContext = RequestContext;
export type ApiRequest<C extends Context = ApiContext> = Request<
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Error,
  C,
  // What the middlewares share on middy's request.internal (each reads only its own part).
  Record<string, any>
>;

export interface EventParts {
  route?: 'finances' | 'daemons' | 'projects';
  team?: string;
  /** Header names lower-cased, as API Gateway passes them. */
  headers?: Record<string, string>;
  query?: Record<string, string>;
}

export function apiEvent({
  route = 'projects',
  team = 'acme',
  headers = {},
  query,
}: EventParts = {}): APIGatewayProxyEventV2 {
  const path = `/api/${team}/${route}`;
  const rawQueryString = query ? new URLSearchParams(query).toString() : '';
  return {
    version: '2.0',
    routeKey: `GET /api/{team}/${route}`,
    rawPath: path,
    rawQueryString,
    headers: { host: 'api.example.com', 'x-forwarded-proto': 'https', ...headers },
    ...(query ? { queryStringParameters: query } : {}),
    pathParameters: { team },
    requestContext: {
      accountId: '000000000000',
      apiId: 'unit',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      http: { method: 'GET', path, protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'unit-test' },
      requestId: 'api-request-1',
      routeKey: `GET /api/{team}/${route}`,
      stage: '$default',
      time: '01/Jun/2026:12:00:00 +0000',
      timeEpoch: 1_780_315_200_000,
    },
    isBase64Encoded: false,
  };
}

/** The Lambda context, with the clock and signal the request's first middleware starts. */
export function apiContext(parts: Partial<ApiContext> = {}): ApiContext {
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: 'unit-function',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:eu-west-1:000000000000:function:unit-function',
    memoryLimitInMB: '1024',
    awsRequestId: 'lambda-request-1',
    logGroupName: '/aws/lambda/unit-function',
    logStreamName: 'unit',
    getRemainingTimeInMillis: () => 10_000,
    done: () => {},
    fail: () => {},
    succeed: () => {},
    // A logger that writes nothing, as with LOG_LEVEL=SILENT; the function's first request.
    log: createLogger({ LOG_LEVEL: 'SILENT' }),
    coldStart: true,
    startedAt: monotonicMs(),
    signal: new AbortController().signal,
    usage: new DatabaseUsage(),
    ...parts,
  } as ApiContext;
}

export function apiRequest<C extends Context = ApiContext>(
  parts: {
    event?: APIGatewayProxyEventV2;
    context?: C;
    response?: APIGatewayProxyStructuredResultV2 | null;
    error?: Error | null;
  } = {},
): ApiRequest<C> {
  return {
    event: parts.event ?? apiEvent(),
    context: parts.context ?? (apiContext() as Context as C),
    response: parts.response ?? null,
    error: parts.error ?? null,
    internal: {},
  };
}

/** A contract error as the client will get it: status, body (parsed) and headers. */
export interface ThrownContractError {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

/** What a middleware step threw, which must be one of the contract's errors (shared/api/http/errors.ts). */
export async function thrownContractError(step: () => unknown): Promise<ThrownContractError> {
  const error = await Promise.resolve()
    .then(step)
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  if (!isContractError(error))
    throw new Error(`expected a contract error, got ${error === undefined ? 'none' : String(error)}`);
  return {
    status: error.statusCode,
    body: JSON.parse(error.message) as Record<string, unknown>,
    headers: error.headers,
  };
}
