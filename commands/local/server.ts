import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { FUNCTION_TIMEOUT_MS } from '../../shared/function-settings.ts';
import { SERVED_ROUTES, type FunctionName } from '../../shared/routes.ts';
import { lambdaContext, routeRequest } from './api-gateway-event.ts';

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

/**
 * Handlers called in this process, all requests in one module scope: for stand-in functions and
 * tests that read the functions' state. `npm start` runs the functions in containers (containers.ts).
 */
export function inProcess(handlers: Handlers): Functions {
  return {
    invoke: (name, event, timeoutMs) =>
      Promise.race([
        (async () => handlers[name](event, lambdaContext(name, timeoutMs, event.requestContext.requestId)))(),
        sleep(timeoutMs, undefined, { ref: false }).then(() => Promise.reject(new Error(`${name} timed out`))),
      ]),
    close: async () => {},
  };
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
/**
 * API Gateway's own answer when a function throws or runs past its timeout, as "Troubleshooting
 * issues with HTTP API Lambda integrations" shows it
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-troubleshooting-lambda.html).
 */
const INTERNAL_SERVER_ERROR = '{"message":"Internal Server Error"}';

/**
 * What API Gateway does in front of the functions, on 127.0.0.1: routes by the shared route table
 * (anything else is API Gateway's own 404), builds the payload 2.0 event, calls the function and
 * writes its result. Started without functions (npm start listens first, so that a port in use is
 * said at once), it holds each request until `serve` gives them. No CORS: no web page may read it.
 */
export async function startLocalServer(
  options: { functions?: Functions; port?: number; functionTimeoutMs?: number } = {},
) {
  const functions = Promise.withResolvers<Functions>();
  if (options.functions) functions.resolve(options.functions);
  const timeoutMs = options.functionTimeoutMs ?? FUNCTION_TIMEOUT_MS;
  const server = createServer(async (req, res) => {
    req.resume(); // no route takes a body
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
    if (routed.route) {
      const { route, event } = routed;
      const { invoke } = await functions.promise;
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
  // Malformed requests Node rejects itself still get a JSON body.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return socket.destroy();
    const [status, message] =
      error.code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request Header Fields Too Large'] : [400, 'Bad Request'];
    const body = JSON.stringify({ message });
    socket.end(
      `HTTP/1.1 ${status} ${message}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  await new Promise<void>((resolve, reject) =>
    server.once('error', reject).listen(options.port ?? 0, '127.0.0.1', resolve),
  );
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    serve: (given: Functions) => functions.resolve(given),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
