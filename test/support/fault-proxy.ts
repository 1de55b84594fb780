import { request as httpRequest, Agent } from 'node:http';
import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of DynamoDB Local that can be switched, at any moment, to
 * fail the way a real network or a real DynamoDB fails:
 *
 * - `pass`: bytes flow unchanged both ways.
 * - `refuse`: nothing listens on the port any more (ECONNREFUSED: unreachable).
 * - `close`: connections are accepted and closed at once (FIN before any answer).
 * - `reset`: each request is answered with a TCP RST (socket.resetAndDestroy()).
 * - `slow`: each request is forwarded only after `delayMs` (longer than any timeout: too slow).
 * - `hold`: each request is held until the test calls `release()` (a read slowed exactly as
 *   long as the test needs, e.g. until imports have run under it).
 * - `throttle` / `provisioned`: each request is answered HTTP 400 with DynamoDB's own
 *   ThrottlingException / ProvisionedThroughputExceededException body.
 * - `internal`: each request is answered HTTP 500 InternalServerError.
 * - `unprocessed`: each BatchGetItem is answered 200 with every key back in `UnprocessedKeys`
 *   and nothing read, as DynamoDB answers a throttled batch; with `passEvery: n` every n-th one
 *   is forwarded instead. Other operations are forwarded.
 *
 * A fault may be limited to some DynamoDB operations (`operations: ['Query']`); other requests
 * are then forwarded. Switching mode drops every open connection, so pooled keep-alive sockets
 * meet the new mode on their next request, as they would after a network change.
 */
export type Fault =
  | 'refuse'
  | 'close'
  | 'reset'
  | 'slow'
  | 'hold'
  | 'throttle'
  | 'provisioned'
  | 'internal'
  | 'unprocessed';
export type ProxyMode =
  | { fault: 'pass' }
  | { fault: Fault; delayMs?: number; operations?: string[]; passEvery?: number };

export interface FaultProxy {
  /** The endpoint to give the API instead of DynamoDB Local's. */
  endpoint: string;
  port: number;
  set(mode: ProxyMode): Promise<void>;
  pass(): Promise<void>;
  /** How many times a fault was applied (refused connects are not seen, so not counted). */
  readonly injected: number;
  /** Requests forwarded while a fault limited to other operations was on. */
  readonly forwarded: number;
  /** Requests `hold` is holding now. */
  readonly held: number;
  /** Forwards every request `hold` holds. */
  release(): void;
  close(): Promise<void>;
}

const AMZ_JSON = 'application/x-amz-json-1.0';
const ERROR_BODIES: Record<
  'throttle' | 'provisioned' | 'internal',
  { status: number; reason: string; type: string; message: string }
> = {
  throttle: {
    status: 400,
    reason: 'Bad Request',
    type: 'ThrottlingException',
    message: 'Rate of requests exceeds the allowed throughput.',
  },
  provisioned: {
    status: 400,
    reason: 'Bad Request',
    type: 'ProvisionedThroughputExceededException',
    message: 'The level of configured provisioned throughput for the table was exceeded.',
  },
  internal: {
    status: 500,
    reason: 'Internal Server Error',
    type: 'InternalServerError',
    message: 'Internal server error',
  },
};

export async function startFaultProxy(upstream: string): Promise<FaultProxy> {
  const target = new URL(upstream);
  const targetHost = target.hostname;
  const targetPort = Number(target.port);
  const upstreamAgent = new Agent({ keepAlive: true, maxSockets: 64 });
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let holding: (() => void)[] = [];
  let mode: ProxyMode = { fault: 'pass' };
  let injected = 0;
  let forwarded = 0;
  let batchGets = 0;
  let port = 0;
  let listening = false;

  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };

  const server: Server = createServer((client) => {
    track(client);
    const current = mode;
    if (current.fault === 'pass') return pipe(client);
    if (current.fault === 'close' && !current.operations) {
      injected++;
      client.end();
      return;
    }
    serveRequests(client, current);
  });

  function pipe(client: Socket) {
    const up = connect(targetPort, targetHost);
    track(up);
    const drop = () => {
      client.destroy();
      up.destroy();
    };
    up.on('close', drop);
    client.on('close', drop);
    client.pipe(up);
    up.pipe(client);
  }

  /** HTTP-aware handling: reads each request whole, then applies the fault or forwards it. */
  function serveRequests(client: Socket, current: Exclude<ProxyMode, { fault: 'pass' }>) {
    let buffer = Buffer.alloc(0);
    let busy = false;
    const next = () => {
      if (busy || client.destroyed) return;
      const parsed = parseRequest(buffer);
      if (!parsed) return;
      buffer = buffer.subarray(parsed.length);
      busy = true;
      const done = () => {
        busy = false;
        next();
      };
      const operation = parsed.headers['x-amz-target']?.split('.').pop() ?? '';
      const spared =
        current.fault === 'unprocessed' &&
        (operation !== 'BatchGetItem' || (current.passEvery !== undefined && ++batchGets % current.passEvery === 0));
      if (spared || (current.operations && !current.operations.includes(operation))) {
        forwarded++;
        forward(client, parsed, done);
        return;
      }
      injected++;
      switch (current.fault) {
        case 'reset':
          client.resetAndDestroy();
          return;
        case 'close':
          client.destroy();
          return;
        case 'refuse':
          client.destroy();
          return;
        case 'unprocessed': {
          const { RequestItems } = JSON.parse(parsed.body.toString('utf8')) as {
            RequestItems: Record<string, unknown>;
          };
          const body = JSON.stringify({
            Responses: Object.fromEntries(Object.keys(RequestItems).map((t) => [t, []])),
            UnprocessedKeys: RequestItems,
          });
          client.write(
            `HTTP/1.1 200 OK\r\nx-amzn-RequestId: fault-proxy-${injected}\r\nContent-Type: ${AMZ_JSON}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
          );
          done();
          return;
        }
        case 'hold':
          holding.push(() => forward(client, parsed, done));
          return;
        case 'slow': {
          const timer = setTimeout(() => {
            timers.delete(timer);
            forward(client, parsed, done);
          }, current.delayMs ?? 60_000);
          timers.add(timer);
          return;
        }
        default: {
          const error = ERROR_BODIES[current.fault];
          const body = JSON.stringify({
            __type: `com.amazonaws.dynamodb.v20120810#${error.type}`,
            message: error.message,
          });
          client.write(
            `HTTP/1.1 ${error.status} ${error.reason}\r\nx-amzn-RequestId: fault-proxy-${injected}\r\n` +
              `Content-Type: ${AMZ_JSON}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
          );
          done();
        }
      }
    };
    client.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      next();
    });
  }

  function forward(client: Socket, parsed: ParsedRequest, done: () => void) {
    const req = httpRequest(
      {
        host: targetHost,
        port: targetPort,
        method: parsed.method,
        path: parsed.path,
        headers: parsed.headers,
        agent: upstreamAgent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          if (client.destroyed) return;
          const body = Buffer.concat(chunks);
          let head = `HTTP/1.1 ${res.statusCode} ${res.statusMessage}\r\n`;
          for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
            const name = res.rawHeaders[i]!;
            if (/^(content-length|transfer-encoding|connection|keep-alive)$/i.test(name)) continue;
            head += `${name}: ${res.rawHeaders[i + 1]}\r\n`;
          }
          client.write(Buffer.concat([Buffer.from(`${head}Content-Length: ${body.length}\r\n\r\n`), body]));
          done();
        });
      },
    );
    req.on('error', () => client.destroy());
    req.end(parsed.body);
  }

  async function listen() {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    port = (server.address() as { port: number }).port;
    listening = true;
  }

  function dropConnections() {
    holding = [];
    for (const timer of timers) clearTimeout(timer);
    timers.clear();
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    upstreamAgent.destroy();
  }

  await listen();

  const proxy: FaultProxy = {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    get injected() {
      return injected;
    },
    get forwarded() {
      return forwarded;
    },
    get held() {
      return holding.length;
    },
    release() {
      const released = holding;
      holding = [];
      for (const forwardHeld of released) forwardHeld();
    },
    async set(next) {
      mode = next;
      dropConnections();
      if (next.fault === 'refuse' && !('operations' in next && next.operations)) {
        if (listening) {
          listening = false;
          injected++;
          await new Promise<void>((resolve) => server.close(() => resolve()));
        }
      } else if (!listening) {
        await listen();
      }
    },
    pass: () => proxy.set({ fault: 'pass' }),
    async close() {
      mode = { fault: 'pass' };
      dropConnections();
      if (listening) {
        listening = false;
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
  return proxy;
}

interface ParsedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  /** Bytes of the buffer the request took. */
  length: number;
}

/** One whole HTTP/1.1 request from the front of the buffer (the SDK always sends Content-Length). */
function parseRequest(buffer: Buffer): ParsedRequest | undefined {
  const end = buffer.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const lines = buffer.subarray(0, end).toString('latin1').split('\r\n');
  const [method = 'POST', path = '/'] = lines[0]!.split(' ');
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const bodyLength = Number(headers['content-length'] ?? 0);
  const total = end + 4 + bodyLength;
  if (buffer.length < total) return undefined;
  return { method, path, headers, body: buffer.subarray(end + 4, total), length: total };
}
