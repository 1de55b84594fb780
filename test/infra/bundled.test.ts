import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { request } from 'node:http';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../infra/functions.ts';
import { findBundledFunctions, loadBundledHandlers } from '../../commands/local/bundled-handlers.ts';
import { loadFunctionHandlers, startLocalServer, type Handlers, type LocalServer } from '../../commands/local/server.ts';
import { freshTable, importDocument } from '../support/dynamodb.ts';
import { daemons, environment, projects, server, snapshot, team, token, user } from '../support/snapshots.ts';
import { synthStack } from './support.ts';

/**
 * Run what you deploy: the three bundles `cdk synth` produced, imported unchanged from the cloud
 * assembly (outside the project, so nothing can be resolved from its node_modules), served by the
 * local API Gateway against DynamoDB Local, answer every request exactly as the source modules do.
 */
let assemblyDir: string;
let bundled: Handlers;
let servers: { source: LocalServer; bundled: LocalServer };

beforeAll(async () => {
  assemblyDir = mkdtempSync(join(tmpdir(), 'team-resources-assembly-'));
  const { app } = synthStack({ bundle: true, outdir: assemblyDir });
  app.synth();

  const table = await freshTable();
  await importDocument(table, snapshot({
    teams: [team(1, 'acme'), team(2, 'globex')],
    users: [user(10, [1]), user(11, [2])],
    tokens: [token(10, 'secret-all'), token(10, 'secret-finances', ['finances:read']), token(11, 'secret-globex')],
    projects: projects(1, 7),
    environments: [environment(5, 1)],
    servers: [server(7, 1, '24.15'), server(8, 1, '10.10', 'USD')],
    daemons: daemons(5, 7, 3),
    costs: [{ team_id: 1, label: 'Backups', amount: '5.00', currency: 'EUR' }],
  }));
  // Both the bundles and the source modules read their configuration once, when imported.
  Object.assign(process.env, { TABLE_NAME: table.tableName, DYNAMODB_ENDPOINT: table.endpoint, LOG_LEVEL: 'SILENT' });
  delete process.env.PUBLIC_BASE_URL;
  bundled = await loadBundledHandlers(assemblyDir);
  const source = await loadFunctionHandlers();
  servers = { source: await startLocalServer({ handlers: source }), bundled: await startLocalServer({ handlers: bundled }) };
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
function ask(server: LocalServer, path: string, secret?: string, extraHeaders: Record<string, string> = {}): Promise<Answer> {
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
    for (const name of ['finances', 'daemons', 'projects', 'openapi'] as const) expect(bundled[name]).not.toBe(source[name]);
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
    const [fromSource, fromBundle] = await Promise.all([ask(servers.source, path, secret), ask(servers.bundled, path, secret)]);
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
