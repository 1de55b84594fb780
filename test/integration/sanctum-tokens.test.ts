import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { lambdaContext, routeRequest } from '../../commands/local/api-gateway-event.ts';
import { hashToken } from '../../shared/api/bearer.ts';
import { readApiConfig } from '../../shared/api/config.ts';
import { financesHandler, listHandler } from '../../shared/api/http/handlers.ts';
import { createDynamoDbClient } from '../../shared/table/dynamodb-client.ts';
import { TeamReader } from '../../shared/api/team-reader.ts';
import { callRecorder, type CallTrace } from '../support/calls.ts';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { projects, team, token, user } from '../support/snapshots.ts';

/**
 * Tokens migrated from Laravel Sanctum (docs/contract.md, sections 6 and 7): imported by their
 * hash, and accepted in the two forms Sanctum's findToken accepts, through the real handler chain
 * against DynamoDB Local, every DynamoDB call counted at the client (test/support/calls.ts).
 */
const MIGRATED = 'Wm3T8qYb2LxN5cVf7RkP1sDh9JgA4eZu6HoQ0iXt'; // 40 characters, as Sanctum makes them
const NO_ID = 'Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5Yz7a';
const UNAUTHENTICATED = { status: 401, body: '{"message":"Unauthenticated."}', authenticate: 'Bearer' };

let table: TestTable;

beforeAll(async () => {
  process.env.LOG_LEVEL = 'SILENT';
  table = await freshTable();
  await importDocument(table, {
    teams: [team(1, 'acme')],
    users: [user(10, [1])],
    tokens: [
      {
        id: 5,
        user_id: 10,
        name: 'rocket',
        token_sha256: hashToken(MIGRATED),
        abilities: ['projects:read', 'servers:write'],
      },
      { user_id: 10, name: 'imported without id', token_sha256: hashToken(NO_ID), abilities: ['*'] },
      token(10, 'plain-dev-token'),
    ],
    projects: projects(1, 3),
  });
}, 120_000);

type Handler = (event: unknown, context: unknown) => Promise<APIGatewayProxyStructuredResultV2>;

/** A warm function of each kind, its every DynamoDB call counted. */
function functions() {
  const client = createDynamoDbClient({
    endpoint: table.endpoint,
    connectionTimeoutMs: 500,
    requestTimeoutMs: 10_000,
    maxAttempts: 2,
  });
  const recorder = callRecorder(client);
  const runtime = {
    config: readApiConfig({ TABLE_NAME: table.tableName }),
    reader: new TeamReader(client, { tableName: table.tableName }),
  };
  const handlers: Record<string, Handler> = {
    projects: listHandler('projects', runtime) as unknown as Handler,
    finances: financesHandler(runtime) as unknown as Handler,
  };
  return async function request(
    target: string,
    bearer: string,
  ): Promise<{ status: number; body: string; authenticate?: string; calls: CallTrace }> {
    const routed = routeRequest({
      method: 'GET',
      target,
      rawHeaders: ['Host', 'api.example.com', 'Authorization', `Bearer ${bearer}`],
      sourceIp: '127.0.0.1',
    });
    if (!routed.route) throw new Error(`no route for ${target}`);
    const { route, event } = routed;
    const { result, calls } = await recorder.trace(() =>
      handlers[route.name]!(event, lambdaContext(route.name, 10_000, 'test')),
    );
    const headers = (result.headers ?? {}) as Record<string, string>;
    return { status: result.statusCode!, body: result.body ?? '', authenticate: headers['WWW-Authenticate'], calls };
  };
}

describe('a token migrated from Sanctum', () => {
  it.each([
    ['<id>|<secret>', `5|${MIGRATED}`],
    ['the secret alone', MIGRATED],
    ['an id with leading zeros (Sanctum finds 005 as 5)', `005|${MIGRATED}`],
    ['the secret alone, of a token imported without an id', NO_ID],
  ])('answers %s with the page, as Laravel did', async (_, bearer) => {
    const r = await functions()('/api/acme/projects', bearer);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).meta.total).toBe(3);
  });

  it.each([
    ['a wrong id', `6|${MIGRATED}`],
    ['a wrong secret', `5|${MIGRATED.slice(0, -1)}x`],
    ['an id that is not digits', `five|${MIGRATED}`],
    ['an empty id', `|${MIGRATED}`],
    ['an id sent for a token imported without one', `1|${NO_ID}`],
    ['an id sent with a token this service issued', '1|plain-dev-token'],
  ])("refuses %s with the contract's 401, byte for byte", async (_, bearer) => {
    const r = await functions()('/api/acme/projects', bearer);
    expect({ status: r.status, body: r.body, authenticate: r.authenticate }).toEqual(UNAUTHENTICATED);
  });

  it('grants nothing for an ability this API does not know: servers:write reads no finances', async () => {
    const r = await functions()('/api/acme/finances', `5|${MIGRATED}`);
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body).missing_permissions).toEqual(['finances:read']);
  });
});

describe('what a request costs, in either form', () => {
  const summary = (calls: CallTrace) => ({
    operations: calls.operations,
    roundTrips: calls.sequentialRoundTrips,
    rcu: calls.rcu,
    consistent: calls.calls.map((c) => c.consistent),
  });

  it('reads the token and the head in one BatchGetItem for the same RCU as a token this service issued', async () => {
    const issued = await functions()('/api/acme/finances', 'plain-dev-token');
    const withId = await functions()('/api/acme/projects', `5|${MIGRATED}`);
    const alone = await functions()('/api/acme/projects', MIGRATED);
    const plain = await functions()('/api/acme/projects', 'plain-dev-token');
    expect(issued.status).toBe(200);
    expect(summary(issued.calls)).toEqual({ operations: ['BatchGetItem'], roundTrips: 1, rcu: 1, consistent: [false] });
    for (const r of [withId, alone]) {
      expect(r.status).toBe(200);
      expect(summary(r.calls)).toEqual(summary(plain.calls));
    }
    expect(summary(plain.calls)).toEqual({
      operations: ['BatchGetItem', 'Query'],
      roundTrips: 2,
      rcu: 1.5,
      consistent: [false, false],
    });
  });

  it('costs a wrong id or a wrong secret the one read of an unknown token, and a non-digit id no read at all', async () => {
    const request = functions();
    // A warm function that just passed the right id: a wrong one does not speculate on that pass.
    await request('/api/acme/projects', `5|${MIGRATED}`);
    const unknown = await request('/api/acme/projects', 'no-such-token-at-all');
    expect(summary(unknown.calls)).toEqual({
      operations: ['BatchGetItem'],
      roundTrips: 1,
      rcu: 0.5,
      consistent: [false],
    });
    // The secret's hash is the key either way; a secret that names a token reads its item (0.5 RCU more), as Sanctum reads the row.
    for (const [bearer, rcu] of [
      [`5|no-such-secret`, 0.5],
      [`6|${MIGRATED}`, 1],
      [`1|${NO_ID}`, 1],
    ] as const) {
      const r = await request('/api/acme/projects', bearer);
      expect(r.status).toBe(401);
      expect(summary(r.calls)).toEqual({ ...summary(unknown.calls), rcu });
    }
    const malformed = await request('/api/acme/projects', `five|${MIGRATED}`);
    expect(malformed.status).toBe(401);
    expect(malformed.calls.operations).toEqual([]);
  });
});

describe('token list and revoke --id --user', () => {
  const ROOT = new URL('../..', import.meta.url).pathname;
  const token = (args: string[]) => {
    const result = spawnSync(process.execPath, [join(ROOT, 'commands/token.ts'), ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        TABLE_NAME: table.tableName,
        DYNAMODB_ENDPOINT: table.endpoint,
      },
    });
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  };

  it('lists a migrated token with its Sanctum id and the abilities it brought', () => {
    const { code, stdout } = token(['list', '--user', '10']);
    expect(code).toBe(0);
    const line = stdout.split('\n').find((l) => l.startsWith(hashToken(MIGRATED)));
    expect(stdout.split('\n')[0]).toMatch(/ EXPIRES +SANCTUM ID +REVOKED$/);
    expect(line).toMatch(/ active\s+rocket\s+projects:read,servers:write\s+\S+\s+never\s+5\s+-$/);
  });

  it('revokes a migrated token by its Sanctum id and user; then neither form reads', async () => {
    expect(token(['revoke', '--id', '7', '--user', '10'])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('user 10 has no token with Sanctum id 7'),
    });
    expect(token(['revoke', '--id', 'seven', '--user', '10'])).toMatchObject({ code: 2 });
    expect(token(['revoke', '--user', '10'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('revoke needs a token, or --id <id>'),
    });
    expect(token(['revoke', '--id', '5', '--user', '10'])).toMatchObject({ code: 0, stdout: 'revoked\n' });
    expect(token(['list', '--user', '10']).stdout).toMatch(/revoked\s+rocket/);
    for (const bearer of [`5|${MIGRATED}`, MIGRATED])
      expect((await functions()('/api/acme/projects', bearer)).status).toBe(401);
  });
});

describe("a Sanctum id names one token (Sanctum's primary key)", () => {
  const FIRST = 'Fq2Wd4Rt6Yu8Io0Pa2Sd4Fg6Hj8Kl0Zx2Cv4Bn6M';
  const SECOND = 'Rt6Yu8Io0Pa2Sd4Fg6Hj8Kl0Zx2Cv4Bn6MFq2Wd4';
  const migrated = (secret: string) => ({
    teams: [team(1, 'acme')],
    users: [user(10, [1])],
    tokens: [{ id: 70, user_id: 10, name: 'cli', token_sha256: hashToken(secret), abilities: ['*'] }],
    projects: projects(1, 3),
  });

  it('replaces the token that held the id before: it stops working, in either form', async () => {
    await importDocument(table, migrated(FIRST));
    expect((await functions()('/api/acme/projects', `70|${FIRST}`)).status).toBe(200);
    await importDocument(table, migrated(SECOND));
    for (const bearer of [`70|${FIRST}`, FIRST]) {
      const r = await functions()('/api/acme/projects', bearer);
      expect({ status: r.status, body: r.body, authenticate: r.authenticate }).toEqual(UNAUTHENTICATED);
    }
    expect((await functions()('/api/acme/projects', `70|${SECOND}`)).status).toBe(200);
    expect((await functions()('/api/acme/projects', SECOND)).status).toBe(200);
  });
});
