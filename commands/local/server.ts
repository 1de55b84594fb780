import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { SERVED_ROUTES, type FunctionName } from '../../shared/routes.ts';
import { FUNCTION_TIMEOUT_MS } from '../../shared/function-settings.ts';
import { lambdaContext, routeRequest } from './api-gateway-event.ts';

export type LambdaHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;
export type Handlers = Record<FunctionName, LambdaHandler>;

export interface LocalServer {
  url: string;
  port: number;
  /** Starts calling these functions (for a server started without them, which answers 503 until then). */
  serve(handlers: Handlers): void;
  close(): Promise<void>;
}

/** The deployed functions' timeout, so local requests get the same time budget. */
export { FUNCTION_TIMEOUT_MS } from '../../shared/function-settings.ts';

/** Loads the functions from functions/, exactly the modules the stack deploys. */
export async function loadFunctionHandlers(): Promise<Handlers> {
  // As Lambda says of an on-demand container; Powertools reports cold starts from it.
  process.env.AWS_LAMBDA_INITIALIZATION_TYPE ??= 'on-demand';
  const handlers = {} as Handlers;
  for (const { name } of SERVED_ROUTES) {
    handlers[name] = ((await import(`../../functions/${name}.ts`)) as { handler: LambdaHandler }).handler;
  }
  return handlers;
}

/**
 * A small HTTP server that does what API Gateway does in front of the functions: routes by the
 * shared route table (anything else is API Gateway's own 404), builds the payload 2.0 event,
 * calls the function and writes its result.
 */
export async function startLocalServer(options: { handlers?: Handlers; port?: number; host?: string }): Promise<LocalServer> {
  // npm start listens first, so a port in use is reported before DynamoDB Local is started.
  let handlers = options.handlers;
  const server: Server = createServer((req, res) => {
    if (!handlers) return send(res, 503, { 'Content-Type': 'application/json', 'Retry-After': '1' }, '{"message":"Service Unavailable"}');
    void serve(handlers, req, res);
  });
  // Malformed requests Node rejects itself still get a JSON body.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return socket.destroy();
    const [status, message] = error.code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request Header Fields Too Large'] : [400, 'Bad Request'];
    const body = JSON.stringify({ message });
    socket.end(`HTTP/1.1 ${status} ${message}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as { port: number };
  return {
    url: `http://${host}:${port}`,
    port,
    serve: (ready) => { handlers = ready; },
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

async function serve(handlers: Handlers, req: IncomingMessage, res: ServerResponse): Promise<void> {
  req.resume(); // no route takes a body
  const routed = routeRequest({
    method: req.method ?? 'GET',
    target: req.url ?? '/',
    rawHeaders: req.rawHeaders,
    sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
    protocol: `HTTP/${req.httpVersion}`,
  });
  if (!routed.route) return send(res, 404, { 'Content-Type': 'application/json' }, '{"message":"Not Found"}');
  const head = req.method === 'HEAD';
  try {
    const { event, route } = routed;
    const result = await handlers[route.name](event, lambdaContext(route.name, FUNCTION_TIMEOUT_MS, event.requestContext.requestId));
    send(res, result.statusCode ?? 200, (result.headers ?? {}) as Record<string, string>, result.body ?? '', head);
  } catch {
    // What API Gateway answers when a function fails.
    send(res, 500, { 'Content-Type': 'application/json' }, '{"message":"Internal Server Error"}', head);
  }
}

function send(res: ServerResponse, status: number, headers: Record<string, string>, body: string, head = false) {
  // A 304 and a HEAD answer have no body, and no length of one (the function sent no body to measure).
  const bodyless = status === 304 || head;
  res.writeHead(status, bodyless ? headers : { ...headers, 'Content-Length': Buffer.byteLength(body) });
  res.end(bodyless ? undefined : body);
}
