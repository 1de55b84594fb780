import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { functionMemoryMb } from '../../shared/function-settings.ts';
import { ROUTE_METHODS, SERVED_ROUTES, type ServedRoute } from '../../shared/routes.ts';

/**
 * Turns an HTTP request into the event API Gateway's HTTP API (payload 2.0) would send, the way
 * API Gateway does it: the path percent-decoded, header names lower-cased and repeated headers
 * joined with commas, repeated query parameters joined with commas, `requestContext` filled.
 */
export interface IncomingRequest {
  method: string;
  /** The request target as sent: path and query, still percent-encoded. */
  target: string;
  /** Node's rawHeaders: name, value, name, value... */
  rawHeaders: string[];
  sourceIp: string;
  protocol?: string;
}

export type Routed = { route: ServedRoute; event: APIGatewayProxyEventV2 } | { route: undefined };

export function routeRequest(request: IncomingRequest, now = new Date()): Routed {
  const queryAt = request.target.indexOf('?');
  const rawPathEncoded = queryAt === -1 ? request.target : request.target.slice(0, queryAt);
  const rawQueryString = queryAt === -1 ? '' : request.target.slice(queryAt + 1);
  const path = safeDecode(rawPathEncoded);
  if (path === undefined) return { route: undefined };
  const match = matchRoute(request.method, path);
  if (!match) return { route: undefined };

  const headers = joinHeaders(request.rawHeaders);
  headers['x-forwarded-proto'] ??= 'http';
  headers['x-forwarded-for'] ??= request.sourceIp;
  const cookies = headers.cookie?.split(';').map((c) => c.trim()).filter(Boolean);
  delete headers.cookie;
  const queryStringParameters = parseQuery(rawQueryString);
  const routeKey = `${request.method} ${match.route.path}`;
  const event: APIGatewayProxyEventV2 = {
    version: '2.0',
    routeKey,
    rawPath: path,
    rawQueryString,
    ...(cookies && cookies.length > 0 ? { cookies } : {}),
    headers,
    ...(queryStringParameters ? { queryStringParameters } : {}),
    ...(Object.keys(match.params).length > 0 ? { pathParameters: match.params } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: (headers.host ?? 'localhost').split('.')[0]!,
      http: {
        method: request.method,
        path,
        protocol: request.protocol ?? 'HTTP/1.1',
        sourceIp: request.sourceIp,
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    isBase64Encoded: false,
  };
  return { route: match.route, event };
}

function matchRoute(method: string, path: string): { route: ServedRoute; params: Record<string, string> } | undefined {
  // As the stack deploys it: every route for GET and for HEAD, nothing else (ROUTE_METHODS).
  if (!(ROUTE_METHODS as readonly string[]).includes(method)) return undefined;
  const segments = path.split('/');
  for (const route of SERVED_ROUTES) {
    const template = route.path.split('/');
    if (template.length !== segments.length) continue;
    const params: Record<string, string> = {};
    const matches = template.every((part, i) => {
      const segment = segments[i]!;
      if (part.startsWith('{') && part.endsWith('}')) {
        params[part.slice(1, -1)] = segment;
        return segment.length > 0;
      }
      return part === segment;
    });
    if (matches) return { route, params };
  }
  return undefined;
}

function safeDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

function joinHeaders(rawHeaders: string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    const value = rawHeaders[i + 1]!;
    headers[name] = headers[name] === undefined ? value : `${headers[name]},${value}`;
  }
  return headers;
}

function parseQuery(raw: string): Record<string, string> | undefined {
  if (raw === '') return undefined;
  const params: Record<string, string> = {};
  for (const pair of raw.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = decodeQueryPart(eq === -1 ? pair : pair.slice(0, eq));
    const value = decodeQueryPart(eq === -1 ? '' : pair.slice(eq + 1));
    params[name] = params[name] === undefined ? value : `${params[name]},${value}`;
  }
  return Object.keys(params).length > 0 ? params : undefined;
}

function decodeQueryPart(text: string): string {
  const spaced = text.replace(/\+/g, ' ');
  return safeDecode(spaced) ?? spaced;
}

/** A Lambda context with the remaining-time clock a function of `timeoutMs` would have. */
export function lambdaContext(functionName: string, timeoutMs: number, requestId: string): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: String(functionMemoryMb(functionName)),
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(deadline - Date.now(), 0),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
