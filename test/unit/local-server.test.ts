import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { inProcess } from '../support/in-process.ts';
import { startLocalServer, type Handlers, type LambdaHandler, type LocalServer } from '../../commands/local/server.ts';

/**
 * The local API Gateway in front of stand-in functions: what a client sees while npm start is still
 * importing, and API Gateway's own answer to a function that fails (docs/contract.md, section 1).
 */
let server: LocalServer | undefined;
afterEach(async () => server?.close());

const handlersOf = (projects: LambdaHandler) =>
  inProcess({ projects, daemons: projects, finances: projects, openapi: projects } as Handlers);
const ok: LambdaHandler = async () => ({
  statusCode: 200,
  headers: { 'Content-Type': 'application/json' },
  body: '{"ok":true}',
});

describe('the local server', () => {
  it('holds a request that comes before the functions are given, and answers it once they are', async () => {
    server = await startLocalServer();
    let answered = false;
    const early = fetch(`${server.url}/api/acme/projects`).then((answer) => {
      answered = true;
      return answer;
    });
    // A path no route takes is answered at once (API Gateway's own 404): by then the early one is still held.
    expect((await fetch(`${server.url}/nowhere`)).status).toBe(404);
    expect(answered).toBe(false);
    server.serve(handlersOf(ok));
    const answer = await early;
    expect({ status: answer.status, body: await answer.json() }).toEqual({ status: 200, body: { ok: true } });
  });

  it("answers 503 with Retry-After at once before the functions are given, when told to (a sync's first pass), then serves", async () => {
    server = await startLocalServer({ untilServed: 'refuse' });
    const early = await fetch(`${server.url}/api/acme/projects`);
    expect(early.status).toBe(503);
    expect(early.headers.get('retry-after')).toBe('5');
    expect(await early.json()).toEqual({ message: 'Service Unavailable' });
    server.serve(handlersOf(ok));
    const late = await fetch(`${server.url}/api/acme/projects`);
    expect({ status: late.status, body: await late.json() }).toEqual({ status: 200, body: { ok: true } });
  });

  it.each([
    [
      'throws',
      (async () => {
        throw new Error('boom');
      }) as LambdaHandler,
    ],
    ['runs past its timeout', (() => new Promise(() => {})) as LambdaHandler],
  ])("answers API Gateway's own 500 when the function %s", async (_, handler) => {
    server = await startLocalServer({ functions: handlersOf(handler), functionTimeoutMs: 200 });
    const res = await fetch(`${server.url}/api/acme/projects`);
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.text()).toBe('{"message":"Internal Server Error"}');
  });

  it('sends no CORS headers, to a preflight or a request from a page', async () => {
    server = await startLocalServer({ functions: handlersOf(ok) });
    for (const method of ['OPTIONS', 'GET']) {
      const res = await fetch(`${server.url}/api/acme/projects`, {
        method,
        headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'GET' },
      });
      expect([...res.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([]);
    }
  });
});

/** `text` written to the server as it is; everything it sends back, until it closes the connection. */
function exchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
    socket.write(text);
  });
}

/** The status line, content type and body of an answer. */
function parts(answer: string) {
  const [head = '', body] = answer.split('\r\n\r\n');
  const [statusLine, ...headers] = head.split('\r\n');
  const type = headers.find((line) => /^content-type:/i.test(line))?.replace(/^[^:]+:\s*/, '');
  return { statusLine, type, body };
}

describe("the local server's own answers (docs/api.md, Every answer)", () => {
  it.each([
    [
      'request line and headers over 16 KB',
      `GET /api/acme/projects HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`,
      '431 Request Header Fields Too Large',
    ],
    ['a malformed request line', 'NOT HTTP AT ALL\r\n\r\n', '400 Bad Request'],
    ['a malformed header', 'GET /api/acme/projects HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n', '400 Bad Request'],
    [
      'both Content-Length and Transfer-Encoding',
      'GET /api/acme/projects HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      '400 Bad Request',
    ],
    ['HTTP/1.1 without Host', 'GET /api/acme/projects HTTP/1.1\r\n\r\n', '400 Bad Request'],
    [
      'an Expect other than 100-continue',
      'GET /api/acme/projects HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nConnection: close\r\n\r\n',
      '417 Expectation Failed',
    ],
  ])('%s: %s with a JSON body', async (_, request, status) => {
    server = await startLocalServer({ functions: handlersOf(ok) });
    const { statusLine, type, body } = parts(await exchange(server.port, request));
    expect(statusLine).toBe(`HTTP/1.1 ${status}`);
    expect(type).toBe('application/json');
    expect(JSON.parse(body!)).toEqual({ message: status.replace(/^\d+ /, '') });
  });

  it('CONNECT: the connection is closed without an answer', async () => {
    server = await startLocalServer({ functions: handlersOf(ok) });
    expect(await exchange(server.port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n')).toBe('');
  });
});
