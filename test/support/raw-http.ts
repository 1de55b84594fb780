import { connect } from 'node:net';

/**
 * HTTP/1.1 over a bare socket: the request goes out byte for byte as given (dot segments,
 * duplicate headers, invalid percent-encoding, raw non-ASCII bytes), which fetch and
 * http.request would normalise or refuse. The response is parsed just enough to check it.
 */
export interface RawResponse {
  status: number;
  /** Header names lower-cased; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** Header lines as received, for byte-for-byte comparisons. */
  headerLines: string[];
  body: string;
  elapsedMs: number;
}

export interface RawRequestSpec {
  method?: string;
  /** The request target exactly as it goes on the wire. */
  target: string;
  /** Header lines as [name, value] pairs, sent in order (a name may repeat). */
  headers?: [string, string][];
  /** Bytes appended after the header block (a body, or garbage). */
  tail?: Buffer | string;
}

/** Builds the request bytes; strings are written as latin1 unless they are Buffers. */
export function buildRequest(spec: RawRequestSpec, host: string): Buffer {
  const parts: Buffer[] = [];
  const latin1 = (text: string) => Buffer.from(text, 'latin1');
  parts.push(latin1(`${spec.method ?? 'GET'} `), toBytes(spec.target), latin1(' HTTP/1.1\r\n'));
  const headers = spec.headers ?? [];
  if (!headers.some(([name]) => name.toLowerCase() === 'host')) parts.push(latin1(`Host: ${host}\r\n`));
  for (const [name, value] of headers) parts.push(toBytes(name), latin1(': '), toBytes(value), latin1('\r\n'));
  parts.push(latin1('Connection: close\r\n\r\n'));
  if (spec.tail !== undefined) parts.push(typeof spec.tail === 'string' ? latin1(spec.tail) : spec.tail);
  return Buffer.concat(parts);
}

/** Strings made of code points above 0xFF are sent as UTF-8, others as latin1 bytes. */
function toBytes(text: string): Buffer {
  return /[^\x00-\xff]/.test(text) ? Buffer.from(text, 'utf8') : Buffer.from(text, 'latin1');
}

export function rawRequest(port: number, bytes: Buffer, timeoutMs = 15_000): Promise<RawResponse> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (error) return reject(error);
      const parsed = parseResponse(received);
      if (!parsed)
        return reject(
          new Error(
            `no complete HTTP response (got ${received.length} bytes: ${JSON.stringify(received.toString('latin1').slice(0, 200))})`,
          ),
        );
      resolve({ ...parsed, elapsedMs: performance.now() - started });
    };
    const timer = setTimeout(() => finish(new Error(`no response within ${timeoutMs} ms`)), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (parseResponse(received)?.complete) finish();
    });
    socket.on('end', () => finish());
    socket.on('close', () => finish());
    // The server may answer and close before it has read everything we sent (a 400 or 431).
    socket.on('error', (error: NodeJS.ErrnoException) => (received.length > 0 ? finish() : finish(error)));
    socket.write(bytes);
  });
}

function parseResponse(data: Buffer): (Omit<RawResponse, 'elapsedMs'> & { complete: boolean }) | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const lines = data.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1]);
  if (!Number.isInteger(status)) return undefined;
  const headers: Record<string, string> = {};
  const headerLines = lines.slice(1);
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length']);
  const bodyBytes = data.subarray(end + 4);
  const complete = length !== undefined && bodyBytes.length >= length;
  return { status, headers, headerLines, body: bodyBytes.subarray(0, length).toString('utf8'), complete };
}
