import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { functionMemoryMb } from '../../shared/api/function-settings.ts';
import { ROUTE_METHODS, SERVED_ROUTES, type ServedRoute } from '../../shared/api/routes.ts';

/**
 * The one builder of the event API Gateway's HTTP API sends a function (payload format 2.0), for
 * the local server, the sample events in events/ (what `npm run invoke` reads) and the tests. As
 * "Create AWS Lambda proxy integrations for HTTP APIs" describes it
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html):
 * header names lower-cased and repeated headers joined with commas, repeated query parameters joined
 * with commas, cookies in `cookies`, `time` as `12/Mar/2020:19:03:58 +0000`, no `body` without one.
 * The stack serves the `$default` stage, whose paths have no stage segment.
 */
export interface IncomingRequest {
  method: string;
  /** The request target as sent: path and query, still percent-encoded. */
  target: string;
  /** Header names and values in turn, as Node's rawHeaders has them. */
  rawHeaders: string[];
  sourceIp?: string;
  requestId?: string;
}

type Routed = { route: ServedRoute; event: APIGatewayProxyEventV2 } | { route: undefined };

export function routeRequest(request: IncomingRequest, now = new Date()): Routed {
  const [rawPathEncoded = '', rawQueryString = ''] = request.target.split(/\?(.*)/s);
  let rawPath: string;
  try {
    rawPath = decodeURIComponent(rawPathEncoded);
  } catch {
    return { route: undefined };
  }
  const match = matchRoute(request.method, rawPath);
  if (!match) return { route: undefined };

  const headers: Record<string, string> = {};
  for (let i = 0; i + 1 < request.rawHeaders.length; i += 2) {
    const name = request.rawHeaders[i]!.toLowerCase();
    headers[name] =
      headers[name] === undefined ? request.rawHeaders[i + 1]! : `${headers[name]},${request.rawHeaders[i + 1]}`;
  }
  const sourceIp = request.sourceIp ?? '127.0.0.1';
  headers['x-forwarded-proto'] ??= 'http';
  headers['x-forwarded-for'] ??= sourceIp;
  const cookies = headers.cookie
    ?.split(';')
    .map((c) => c.trim())
    .filter(Boolean);
  delete headers.cookie;
  const query: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(rawQueryString))
    query[name] = query[name] === undefined ? value : `${query[name]},${value}`;
  const routeKey = `${request.method} ${match.route.path}`;
  const domainName = headers.host ?? 'localhost';
  return {
    route: match.route,
    event: {
      version: '2.0',
      routeKey,
      rawPath,
      rawQueryString,
      ...(cookies?.length ? { cookies } : {}),
      headers,
      ...(Object.keys(query).length ? { queryStringParameters: query } : {}),
      ...(match.team === undefined ? {} : { pathParameters: { team: match.team } }),
      requestContext: {
        accountId: '000000000000',
        apiId: 'local',
        domainName,
        domainPrefix: domainName.split('.')[0]!,
        http: {
          method: request.method,
          path: rawPath,
          protocol: 'HTTP/1.1',
          sourceIp,
          userAgent: headers['user-agent'] ?? '',
        },
        requestId: request.requestId ?? randomUUID(),
        routeKey,
        stage: '$default',
        time: awsTime(now),
        timeEpoch: now.getTime(),
      },
      isBase64Encoded: false,
    },
  };
}

/** The route for a method and path as the stack deploys them: every route for GET and for HEAD, nothing else. */
function matchRoute(method: string, path: string): { route: ServedRoute; team?: string } | undefined {
  if (!(ROUTE_METHODS as readonly string[]).includes(method)) return undefined;
  const segments = path.split('/');
  for (const route of SERVED_ROUTES) {
    const template = route.path.split('/');
    if (template.length !== segments.length) continue;
    const team = segments[template.indexOf('{team}')];
    if (template.every((part, i) => (part === '{team}' ? segments[i] !== '' : part === segments[i])))
      return { route, team };
  }
  return undefined;
}

/** `12/Mar/2020:19:03:58 +0000`, as API Gateway writes requestContext.time. */
function awsTime(time: Date): string {
  const [, day, month, year, hms] = time.toUTCString().split(' ');
  return `${day}/${month}/${year}:${hms} +0000`;
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
