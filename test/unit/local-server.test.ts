import { afterEach, describe, expect, it } from 'vitest';
import {
  inProcess,
  startLocalServer,
  type Handlers,
  type LambdaHandler,
  type LocalServer,
} from '../../commands/local/server.ts';

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
    const early = fetch(`${server.url}/api/acme/projects`).then(
      async (res) => ((answered = true), { status: res.status, body: await res.json() }),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(answered).toBe(false);
    server.serve(handlersOf(ok));
    expect(await early).toEqual({ status: 200, body: { ok: true } });
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
