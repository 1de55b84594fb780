import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { request } from 'node:http';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../infra/functions.ts';
import { findBundledFunctions, loadBundledHandlers } from '../../commands/local/bundled-handlers.ts';
import { inProcess } from '../support/in-process.ts';
import {
  loadFunctionHandlers,
  startLocalServer,
  type Handlers,
  type LocalServer,
} from '../../commands/local/server.ts';
import { lambdaContext, routeRequest } from '../../commands/local/api-gateway-event.ts';
import { SERVED_ROUTES, type FunctionName } from '../../shared/api/routes.ts';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { freshTable, importDocument } from '../support/dynamodb.ts';
import { daemons, environment, projects, server, snapshot, team, token, user } from '../support/snapshots.ts';
import { synthStack } from '../infra/support.ts';

/**
 * Run what you deploy: the three bundles `cdk synth` produced, imported unchanged from the cloud
 * assembly (outside the project, so nothing can be resolved from its node_modules), served by the
 * local API Gateway against DynamoDB Local, answer every request exactly as the source modules do.
 */
let assemblyDir: string;
let bundled: Handlers;
let source: Handlers;
let servers: { source: LocalServer; bundled: LocalServer };

beforeAll(async () => {
  assemblyDir = mkdtempSync(join(tmpdir(), 'team-resources-assembly-'));
  const { app } = synthStack({ bundle: true, outdir: assemblyDir });
  app.synth();

  const table = await freshTable();
  await importDocument(
    table,
    snapshot({
      teams: [team(1, 'acme'), team(2, 'globex')],
      users: [user(10, [1]), user(11, [2])],
      tokens: [token(10, 'secret-all'), token(10, 'secret-finances', ['finances:read']), token(11, 'secret-globex')],
      projects: projects(1, 7),
      environments: [environment(5, 1)],
      servers: [server(7, 1, '24.15'), server(8, 1, '10.10', 'USD')],
      daemons: daemons(5, 7, 3),
      costs: [{ team_id: 1, label: 'Backups', amount: '5.00', currency: 'EUR' }],
    }),
  );
  // Both the bundles and the source modules read their configuration once, when imported.
  Object.assign(process.env, { TABLE_NAME: table.tableName, DYNAMODB_ENDPOINT: table.endpoint, LOG_LEVEL: 'SILENT' });
  delete process.env.PUBLIC_BASE_URL;
  bundled = await loadBundledHandlers(assemblyDir);
  source = await loadFunctionHandlers();
  servers = {
    source: await startLocalServer({ functions: inProcess(source) }),
    bundled: await startLocalServer({ functions: inProcess(bundled) }),
  };
}, 120_000);

afterAll(async () => {
  await servers?.source.close();
  await servers?.bundled.close();
  rmSync(assemblyDir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  servedIn: unknown;
}

/**
 * One request, with the same Host header whichever server answers, so links (and the ETag over
 * them) do not depend on the port; `served_in` is set aside.
 */
function ask(
  server: LocalServer,
  path: string,
  secret?: string,
  extraHeaders: Record<string, string> = {},
): Promise<Answer> {
  const headers: Record<string, string> = { Host: 'api.example.test', Accept: 'application/json', ...extraHeaders };
  if (secret !== undefined) headers.Authorization = `Bearer ${secret}`;
  return new Promise((resolve, reject) => {
    const req = request(`${server.url}${path}`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const { date: _date, 'content-length': _length, ...kept } = res.headers;
        const body = text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>);
        const servedIn = body?.served_in;
        if (body) delete body.served_in;
        resolve({ status: res.statusCode!, headers: kept, body, servedIn });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the bundles synth produced', () => {
  it('are loaded from the cloud assembly, outside the project', () => {
    for (const fn of Object.values(findBundledFunctions(assemblyDir))) {
      expect(relative(PROJECT_ROOT, fn.file).startsWith('..')).toBe(true);
      expect(fn.file.endsWith('index.mjs')).toBe(true);
    }
  });

  it('are other modules than the sources', async () => {
    const source = await loadFunctionHandlers();
    for (const name of ['finances', 'daemons', 'projects', 'openapi'] as const)
      expect(bundled[name]).not.toBe(source[name]);
  });
});

describe('the bundled functions answer as the source functions do', () => {
  const cases: Array<[string, string, string | undefined, number]> = [
    ['the first page of projects', '/api/acme/projects', 'secret-all', 200],
    ['a middle page, per_page carried in the links', '/api/acme/projects?per_page=2&page=2', 'secret-all', 200],
    ['the last page, short', '/api/acme/projects?per_page=3&page=3', 'secret-all', 200],
    ['a page past the last', '/api/acme/projects?page=99', 'secret-all', 200],
    ['daemons, the team addressed by id', '/api/1/daemons?per_page=2', 'secret-all', 200],
    ['an empty list', '/api/globex/daemons', 'secret-globex', 200],
    ['finances', '/api/acme/finances', 'secret-all', 200],
    ['finances with the finances ability only', '/api/acme/finances', 'secret-finances', 200],
    ['no token', '/api/acme/projects', undefined, 401],
    ['an unknown token', '/api/acme/projects', 'not-a-token', 401],
    ['a token without the ability', '/api/acme/projects', 'secret-finances', 403],
    ['an unknown team', '/api/nope/projects', 'secret-all', 404],
    ["a team the token's user is not in", '/api/globex/finances', 'secret-all', 404],
    ['per_page above 50', '/api/acme/projects?per_page=51', 'secret-all', 422],
    ['two invalid parameters', '/api/acme/daemons?per_page=abc&page=0', 'secret-all', 422],
    ['a path no route serves', '/api/acme/servers', 'secret-all', 404],
    ['the OpenAPI document, without a token', '/api/openapi.json', undefined, 200],
  ];

  it.each(cases)('%s (%s)', async (_name, path, secret, status) => {
    const [fromSource, fromBundle] = await Promise.all([
      ask(servers.source, path, secret),
      ask(servers.bundled, path, secret),
    ]);
    expect(fromSource.status).toBe(status);
    expect(fromBundle).toEqual({ ...fromSource, servedIn: fromBundle.servedIn });
    expect(fromBundle.headers['content-type']).toMatch(/^application\/json/);
    if (fromSource.servedIn !== undefined) expect(fromBundle.servedIn).toMatch(/^\d+(\.\d{1,2})?ms$/);
    else expect(fromBundle.servedIn).toBeUndefined();
  });

  it('a conditional GET naming the current ETag (304, no body)', async () => {
    const { headers } = await ask(servers.source, '/api/acme/projects?per_page=2', 'secret-all');
    const etag = String(headers.etag);
    const [fromSource, fromBundle] = await Promise.all([
      ask(servers.source, '/api/acme/projects?per_page=2', 'secret-all', { 'If-None-Match': etag }),
      ask(servers.bundled, '/api/acme/projects?per_page=2', 'secret-all', { 'If-None-Match': etag }),
    ]);
    expect(fromSource.status).toBe(304);
    expect(fromBundle).toEqual(fromSource);
  });
});

/** One direct invoke, as Lambda makes it (sam local invoke, or API Gateway's integration). */
async function invoke(
  handlers: Handlers,
  name: FunctionName,
  event: unknown,
): Promise<APIGatewayProxyStructuredResultV2> {
  return handlers[name](event as APIGatewayProxyEventV2, lambdaContext(name, 10_000, 'direct-invoke'));
}

/** A result with `served_in` set aside (it differs on every request), the body parsed. */
function comparable(result: APIGatewayProxyStructuredResultV2) {
  const body = result.body === undefined ? undefined : (JSON.parse(result.body) as Record<string, unknown>);
  if (body) delete body.served_in;
  return { statusCode: result.statusCode, headers: result.headers, body, hasBody: 'body' in result };
}

/**
 * The event API Gateway sends for a request (the local server's builder). `asWritten` gives the
 * header names as the client wrote them, as `sam local start-api` passes them on.
 */
function eventOf(
  method: string,
  target: string,
  headers: Record<string, string>,
  options: { stage?: string; asWritten?: boolean } = {},
) {
  const all = { Host: 'api.example.test', Accept: 'application/json', 'X-Forwarded-Proto': 'http', ...headers };
  const routed = routeRequest(
    {
      method,
      target: target.replace(`/${options.stage}/`, '/'),
      rawHeaders: Object.entries(all).flat(),
      requestId: 'test',
    },
    new Date('2026-11-22T10:00:00Z'),
  );
  if (!routed.route) throw new Error(`no route for ${method} ${target}`);
  // A named stage (the stack deploys $default alone) begins rawPath with its segment.
  const event = options.stage
    ? {
        ...routed.event,
        rawPath: target.split('?')[0]!,
        requestContext: { ...routed.event.requestContext, stage: options.stage },
      }
    : routed.event;
  return options.asWritten ? { ...event, headers: all } : event;
}
const samEvent = (target: string, headers: Record<string, string>, method = 'GET') =>
  eventOf(method, target, headers, { asWritten: true });

describe('SAM-shaped events: header names as the client wrote them (sam local start-api, sam local invoke)', () => {
  const cases: Array<[string, FunctionName, string, Record<string, string>, number]> = [
    [
      'a page of projects',
      'projects',
      '/api/acme/projects?per_page=2&page=2',
      { Authorization: 'Bearer secret-all' },
      200,
    ],
    ['daemons', 'daemons', '/api/acme/daemons', { Authorization: 'Bearer secret-all' }, 200],
    ['finances', 'finances', '/api/acme/finances', { Authorization: 'Bearer secret-all' }, 200],
    ['the document', 'openapi', '/api/openapi.json', {}, 200],
    ['a token without the ability', 'projects', '/api/acme/projects', { Authorization: 'Bearer secret-finances' }, 403],
    ['an unknown team', 'projects', '/api/nope/projects', { Authorization: 'Bearer secret-all' }, 404],
    ['no token', 'finances', '/api/acme/finances', {}, 401],
    ['a bad per_page', 'daemons', '/api/acme/daemons?per_page=0', { AUTHORIZATION: 'Bearer secret-all' }, 422],
  ];

  it.each(cases)(
    '%s answers as the lower-cased API Gateway event does (%s)',
    async (_name, name, target, headers, status) => {
      const fromApiGateway = comparable(await invoke(source, name, eventOf('GET', target, headers)));
      expect(fromApiGateway.statusCode).toBe(status);
      for (const handlers of [bundled, source]) {
        expect(comparable(await invoke(handlers, name, samEvent(target, headers)))).toEqual(fromApiGateway);
      }
    },
  );

  it('builds links from the mixed-case Host and X-Forwarded-Proto', async () => {
    const result = comparable(
      await invoke(
        bundled,
        'projects',
        samEvent('/api/acme/projects?per_page=2', { Authorization: 'Bearer secret-all' }),
      ),
    );
    expect(result.body?.links).toMatchObject({ first: 'http://api.example.test/api/acme/projects?per_page=2&page=1' });
  });

  it('answers a mixed-case If-None-Match naming the current ETag with 304', async () => {
    const ok = await invoke(bundled, 'daemons', samEvent('/api/acme/daemons', { Authorization: 'Bearer secret-all' }));
    const etag = (ok.headers as Record<string, string>).ETag!;
    const again = await invoke(
      bundled,
      'daemons',
      samEvent('/api/acme/daemons', { Authorization: 'Bearer secret-all', 'If-None-Match': etag }),
    );
    expect(again.statusCode).toBe(304);
    expect(again.body).toBeUndefined();
  });

  it('answers the events in events/ (the demo token) with the 401 of a token this table does not know', async () => {
    for (const name of ['finances', 'daemons', 'projects'] as const) {
      const event = JSON.parse(
        readFileSync(join(PROJECT_ROOT, 'events', `${name}.json`), 'utf8'),
      ) as APIGatewayProxyEventV2;
      expect(event.headers.authorization).toMatch(/^Bearer /);
      expect((await invoke(bundled, name, event)).statusCode).toBe(401);
    }
  });

  it('HEAD: the status and headers of the GET, no body', async () => {
    for (const [name, target, headers] of [
      ['projects', '/api/acme/projects', { Authorization: 'Bearer secret-all' }],
      ['finances', '/api/acme/finances', {}],
      ['openapi', '/api/openapi.json', {}],
    ] as const) {
      const get = await invoke(bundled, name, samEvent(target, headers));
      const head = await invoke(bundled, name, samEvent(target, headers, 'HEAD'));
      expect(head).toEqual({ statusCode: get.statusCode, headers: get.headers });
    }
  });
});

describe("links from the path in API Gateway's event, through the bundles", () => {
  const linksOf = async (target: string, host: string, stage?: string, proto = 'https') => {
    const result = await invoke(
      bundled,
      'projects',
      eventOf('GET', target, { Host: host, Authorization: 'Bearer secret-all', 'X-Forwarded-Proto': proto }, { stage }),
    );
    expect(result.statusCode).toBe(200);
    return JSON.parse(result.body!) as { links: Record<string, string | null>; meta: { path: string } };
  };

  it('have no stage segment on the $default stage', async () => {
    const body = await linksOf('/api/acme/projects?per_page=2', 'api.example.com');
    expect(body.meta.path).toBe('https://api.example.com/api/acme/projects');
    expect(body.links.next).toBe('https://api.example.com/api/acme/projects?per_page=2&page=2');
  });

  it('keep a named stage, whose segment is in the execute-api URL and in rawPath', async () => {
    const body = await linksOf('/prod/api/acme/projects', 'abc123.execute-api.eu-west-1.amazonaws.com', 'prod');
    expect(body.meta.path).toBe('https://abc123.execute-api.eu-west-1.amazonaws.com/prod/api/acme/projects');
  });

  it('link with https when X-Forwarded-Proto names another scheme', async () => {
    expect((await linksOf('/api/acme/projects', 'api.example.test', undefined, 'ftp')).meta.path).toBe(
      'https://api.example.test/api/acme/projects',
    );
  });
});

describe('a direct invoke with an event that is not an object', () => {
  it.each([
    ['null', null],
    ['a number', 42],
    ['a string', 'GET /api/acme/projects'],
    ['an array', []],
    ['true', true],
  ])("answers %s with the contract's 500, from every bundle and source function", async (_name, event) => {
    for (const handlers of [bundled, source]) {
      for (const { name } of SERVED_ROUTES) {
        const result = await invoke(handlers, name, event);
        expect(result).toEqual({
          statusCode: 500,
          headers: { 'Content-Type': 'application/json; charset=utf-8' },
          body: '{"message":"Server Error"}',
        });
      }
    }
  });
});

/**
 * infra/bundling/node-http.ts: the bundles load node:http with require(), so a cold start does not
 * load undici (an ES import of node:http does, through its WebSocket getter). Each bundle is
 * started in a fresh Node process that answers one request; the process then imports node:http
 * as an ES module itself, to show that the probe would see undici if it were loaded.
 */
describe('a cold start of each bundle', () => {
  const CHILD = `
    const loaded = () => process.moduleLoadList.filter((name) => name.includes('undici'));
    const { handler } = await import(process.env.BUNDLE_URL);
    const context = { functionName: 'probe', awsRequestId: 'cold', memoryLimitInMB: '1024', getRemainingTimeInMillis: () => 10000 };
    const result = await handler(JSON.parse(process.env.EVENT), context);
    const afterRequest = loaded();
    await import('node:http');
    process.stdout.write(JSON.stringify({ status: result.statusCode, afterRequest, afterEsImport: loaded() }));
  `;

  it.each([
    ['projects', '/api/acme/projects?per_page=2'],
    ['daemons', '/api/acme/daemons'],
    ['finances', '/api/acme/finances'],
    ['openapi', '/api/openapi.json'],
  ] as const)('%s answers its first request without loading undici', async (name, target) => {
    const { file } = findBundledFunctions(assemblyDir)[name];
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', CHILD], {
      env: {
        ...process.env,
        BUNDLE_URL: pathToFileURL(file).href,
        EVENT: JSON.stringify(eventOf('GET', target, { Authorization: 'Bearer secret-all' })),
      },
      encoding: 'utf8',
      timeout: 30_000,
    });
    const probe = JSON.parse(stdout) as { status: number; afterRequest: string[]; afterEsImport: string[] };
    expect(probe.status).toBe(200);
    expect(probe.afterRequest).toEqual([]);
    expect(probe.afterEsImport.length).toBeGreaterThan(0);
  });
});
