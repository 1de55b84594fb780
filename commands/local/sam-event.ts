import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { ServedRoute } from '../../shared/routes.ts';

/**
 * A payload 2.0 event in the shape the AWS SAM CLI uses: the keys and their order of SAM's own
 * HttpApi template (`sam local generate-event apigateway http-api-proxy`), filled as
 * `sam local start-api` fills them for a GET or HEAD: header names as the client wrote them
 * (`Authorization`, `Host`, `If-None-Match`) plus SAM's `X-Forwarded-Proto` and `X-Forwarded-Port`,
 * `cookies` a list, an empty body, no stage variables. Two keys of the template are left out:
 * `requestContext.authentication` (mutual TLS) and `requestContext.authorizer` (a JWT or Lambda
 * authorizer); this API has neither, and API Gateway sends neither without them.
 *
 * events/ holds such events (commands/demo/make-sample-events.ts), and the tests send them to
 * the bundled functions: the functions must not depend on API Gateway's lower-cased names.
 */
export interface SamRequest {
  route: ServedRoute;
  method: 'GET' | 'HEAD';
  /** The path the client called, without the query: a stage or API mapping path may precede the route's. */
  rawPath: string;
  rawQueryString?: string;
  /** Header names as the client wrote them. */
  headers: Record<string, string>;
  pathParameters?: Record<string, string>;
  /** `$default` unless a named stage served the request. */
  stage?: string;
  /** The host the client called (an execute-api host or a custom domain). */
  domainName?: string;
  scheme?: 'http' | 'https';
  port?: number;
  requestId?: string;
  time?: Date;
  sourceIp?: string;
}

export function samHttpApiEvent(request: SamRequest): APIGatewayProxyEventV2 {
  const time = request.time ?? new Date();
  const scheme = request.scheme ?? 'http';
  const domainName = request.domainName ?? request.headers.Host ?? 'localhost';
  const routeKey = `${request.method} ${request.route.path}`;
  const rawQueryString = request.rawQueryString ?? '';
  return {
    version: '2.0',
    routeKey,
    rawPath: request.rawPath,
    rawQueryString,
    cookies: [],
    headers: {
      ...request.headers,
      'X-Forwarded-Proto': scheme,
      'X-Forwarded-Port': String(request.port ?? (scheme === 'https' ? 443 : 3000)),
    },
    queryStringParameters: queryParameters(rawQueryString),
    requestContext: {
      accountId: '123456789012',
      apiId: '1234567890',
      domainName,
      domainPrefix: domainName.split('.')[0]!,
      http: {
        method: request.method,
        path: request.rawPath,
        protocol: 'HTTP/1.1',
        sourceIp: request.sourceIp ?? '127.0.0.1',
        userAgent: request.headers['User-Agent'] ?? 'Custom User Agent String',
      },
      requestId: request.requestId ?? 'c6af9ac6-7b61-11e6-9a41-93e8deadbeef',
      routeKey,
      stage: request.stage ?? '$default',
      // SAM's format, as in its template: 12/Mar/2020:19:03:58 +0000
      time: samTime(time),
      timeEpoch: time.getTime(),
    },
    body: '',
    pathParameters: request.pathParameters ?? {},
    isBase64Encoded: false,
    stageVariables: null as never,
  };
}

/** SAM joins repeated parameters with commas, as API Gateway does. */
function queryParameters(rawQueryString: string): Record<string, string> {
  const joined: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(rawQueryString)) {
    joined[name] = joined[name] === undefined ? value : `${joined[name]},${value}`;
  }
  return joined;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
function samTime(time: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(time.getUTCDate())}/${MONTHS[time.getUTCMonth()]}/${time.getUTCFullYear()}:${two(time.getUTCHours())}:${two(time.getUTCMinutes())}:${two(time.getUTCSeconds())} +0000`;
}
