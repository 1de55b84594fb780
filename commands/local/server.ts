import { createServer, STATUS_CODES, type ServerResponse } from 'node:http';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { FUNCTION_TIMEOUT_MS } from '../../shared/api/function-settings.ts';
import { SERVED_ROUTES, type FunctionName } from '../../shared/api/routes.ts';
import { routeRequest } from './api-gateway-event.ts';

export type LambdaHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;
export type Handlers = Record<FunctionName, LambdaHandler>;

/** The server; `serve(functions)` starts calling them, and requests that came before are answered then. */
export type LocalServer = Awaited<ReturnType<typeof startLocalServer>>;

/** How the server calls a function: its result, or a rejection when it throws or runs past `timeoutMs`. */
export interface Functions {
  invoke(
    name: FunctionName,
    event: APIGatewayProxyEventV2,
    timeoutMs: number,
  ): Promise<APIGatewayProxyStructuredResultV2>;
  close(): Promise<void>;
}

/** Loads each function's handler with `load`: by default from functions/, exactly the modules the stack deploys. */
export async function loadFunctionHandlers(
  load = async (name: FunctionName) =>
    ((await import(`../../functions/${name}.ts`)) as { handler: LambdaHandler }).handler,
): Promise<Handlers> {
  const handlers = {} as Handlers;
  for (const { name } of SERVED_ROUTES) handlers[name] = await load(name);
  return handlers;
}

const JSON_TYPE = { 'Content-Type': 'application/json' };
/** The answers to what Node's parser rejects, by its error code: anything else is a 400. */
const CLIENT_ERRORS: Record<string, number> = {
  HPE_HEADER_OVERFLOW: 431, // request line and headers over Node's 16 KB
  ERR_HTTP_REQUEST_TIMEOUT: 408, // headers not complete within Node's headersTimeout
};

/** The server's own answer with `status`, its reason as the JSON body, and the connection closed. */
function ownAnswer(res: ServerResponse, status: number): void {
  const body = JSON.stringify({ message: STATUS_CODES[status] });
  res.writeHead(status, { ...JSON_TYPE, 'Content-Length': Buffer.byteLength(body), Connection: 'close' }).end(body);
}
/**
 * API Gateway's own answer when a function throws or runs past its timeout, as "Troubleshooting
 * issues with HTTP API Lambda integrations" shows it
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-troubleshooting-lambda.html).
 */
const INTERNAL_SERVER_ERROR = '{"message":"Internal Server Error"}';

/** The contract's answer while the data is still being loaded (docs/contract.md, section 2). */
const NOT_READY: APIGatewayProxyStructuredResultV2 = {
  statusCode: 503,
  headers: { ...JSON_TYPE, 'Retry-After': '5' },
  body: '{"message":"Service Unavailable"}',
};

/**
 * What API Gateway does in front of the functions, on 127.0.0.1: routes by the shared route table
 * (anything else is API Gateway's own 404), builds the payload 2.0 event, calls the function and
 * writes its result. Started without functions (npm start listens first, so that a port in use is
 * said at once, then loads its data), it holds each request until `serve` gives them, as a snapshot
 * loads in seconds; or, with `untilServed: 'refuse'` (a sync's first full pass, which may take
 * minutes), answers it at once with the contract's 503 and Retry-After: a client is told to come
 * back, never left hanging. No CORS: no web page may read it.
 */
export async function startLocalServer(
  options: { functions?: Functions; port?: number; functionTimeoutMs?: number; untilServed?: 'hold' | 'refuse' } = {},
) {
  let functions = options.functions;
  let served!: () => void;
  const serving = new Promise<void>((resolve) => {
    served = resolve;
  });
  const timeoutMs = options.functionTimeoutMs ?? FUNCTION_TIMEOUT_MS;
  // Without Host, HTTP/1.1 is malformed: answered below with a JSON body, not Node's empty one.
  const server = createServer({ requireHostHeader: false }, async (req, res) => {
    req.resume(); // no route takes a body
    if (req.httpVersion === '1.1' && req.headers.host === undefined) return ownAnswer(res, 400);
    const routed = routeRequest({
      method: req.method!,
      target: req.url!,
      rawHeaders: req.rawHeaders,
      sourceIp: req.socket.remoteAddress,
    });
    let result: APIGatewayProxyStructuredResultV2 = {
      statusCode: 404,
      headers: JSON_TYPE,
      body: '{"message":"Not Found"}',
    };
    if (routed.route && !functions && options.untilServed !== 'refuse') await serving;
    if (routed.route && !functions) result = NOT_READY;
    else if (routed.route) {
      const { route, event } = routed;
      const { invoke } = functions!;
      result = (await invoke(route.name, event, timeoutMs).catch(() => undefined)) ?? {
        statusCode: 500,
        headers: JSON_TYPE,
        body: INTERNAL_SERVER_ERROR,
      };
    }
    // A 304 and a HEAD answer have no body, and no length of one (the function sent no body to measure).
    const bodyless = result.statusCode === 304 || req.method === 'HEAD';
    const headers = result.headers as Record<string, string> | undefined;
    res.writeHead(
      result.statusCode ?? 200,
      bodyless ? headers : { ...headers, 'Content-Length': Buffer.byteLength(result.body ?? '') },
    );
    res.end(bodyless ? undefined : result.body);
  });
  // What Node's HTTP server rejects itself still gets a JSON body (docs/api.md, "Every answer").
  server.on('checkExpectation', (_, res) => ownAnswer(res, 417));
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return socket.destroy();
    const status = CLIENT_ERRORS[error.code ?? ''] ?? 400;
    const body = JSON.stringify({ message: STATUS_CODES[status] });
    const head = [
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
      'Content-Type: application/json',
      `Content-Length: ${body.length}`,
      'Connection: close',
    ];
    socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  });
  // CONNECT (a proxy's tunnel) is nothing this server serves: with no 'connect' listener, Node
  // closes the connection without an answer.
  await new Promise<void>((resolve, reject) =>
    server.once('error', reject).listen(options.port ?? 0, '127.0.0.1', resolve),
  );
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    serve: (given: Functions) => {
      functions = given;
      served();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
