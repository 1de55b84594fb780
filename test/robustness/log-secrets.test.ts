import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revoke } from '../../commands/tokens/tokens.ts';
import { freshTable, importDocument } from '../support/dynamodb.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { buildRequest, rawRequest } from '../support/raw-http.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { projects, snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * No token and no Authorization header in any log line: the real functions run in a process of
 * their own at LOG_LEVEL=INFO, DynamoDB behind the fault proxy, and everything they write to
 * stdout and stderr is searched after a run of successes and failures of every kind (401, 403,
 * 404, 422, and 503s from a refused and a throttled DynamoDB).
 */
const SECRETS = {
  all: 'tra_LogAllAbilitiesSecret0123456789abcdefghijkl',
  projects: 'tra_LogProjectsOnlySecret0123456789abcdefghijk',
  expired: 'tra_LogExpiredSecret0123456789abcdefghijklmnop',
  revoked: 'tra_LogRevokedSecret0123456789abcdefghijklmnop',
};
const NEAR_MISS = `${SECRETS.all.slice(0, -1)}X`;
const ALL_SECRETS = [...Object.values(SECRETS), NEAR_MISS];

let proxy: FaultProxy;
let server: ServerProcess;
let output: { stdout: string; stderr: string };
const statuses: number[] = [];

beforeAll(async () => {
  const table = await freshTable();
  await importDocument(
    table,
    snapshot({
      teams: [team(1, 'acme'), team(2, 'other')],
      users: [user(10, [1])],
      tokens: [
        token(10, SECRETS.all),
        token(10, SECRETS.projects, ['projects:read']),
        token(10, SECRETS.expired, ['*'], { expires_at: '2020-01-01T00:00:00Z' }),
        token(10, SECRETS.revoked),
      ],
      projects: projects(1, 3),
    }),
  );
  await revoke(table.doc, table.tableName, { secret: SECRETS.revoked });
  proxy = await startFaultProxy(table.endpoint);
  // Event logging switched on from the environment must not bring the event (and its token) into the logs.
  server = await startServerProcess({
    TABLE_NAME: table.tableName,
    DYNAMODB_ENDPOINT: proxy.endpoint,
    LOG_LEVEL: 'INFO',
  });
  const port = Number(new URL(server.url).port);
  const send = async (target: string, headers: [string, string][]) => {
    const res = await rawRequest(port, buildRequest({ target, headers }, `127.0.0.1:${port}`));
    statuses.push(res.status);
    return res.status;
  };
  const bearer = (secret: string): [string, string] => ['Authorization', `Bearer ${secret}`];

  expect(await send('/api/acme/projects', [bearer(SECRETS.all)])).toBe(200);
  expect(await send('/api/acme/finances', [['authorization', `  bEaReR   ${SECRETS.all}  `]])).toBe(200);
  expect(await send('/api/acme/projects', [bearer(NEAR_MISS)])).toBe(401);
  expect(await send('/api/acme/projects', [bearer(SECRETS.expired)])).toBe(401);
  expect(await send('/api/acme/projects', [bearer(SECRETS.revoked)])).toBe(401);
  expect(
    await send('/api/acme/projects', [
      ['Authorization', `Basic ${Buffer.from(`user:${SECRETS.all}`).toString('base64')}`],
    ]),
  ).toBe(401);
  expect(await send('/api/acme/projects', [['Authorization', `Token ${SECRETS.all}`]])).toBe(401);
  expect(await send('/api/acme/projects', [bearer(SECRETS.all), bearer(SECRETS.projects)])).toBe(401);
  expect(await send('/api/acme/finances', [bearer(SECRETS.projects)])).toBe(403);
  expect(await send('/api/other/projects', [bearer(SECRETS.all)])).toBe(404);
  expect(await send('/api/nope/daemons', [bearer(SECRETS.all)])).toBe(404);
  // A token pasted into the path by mistake names no team, and is not logged as one.
  expect(await send(`/api/${SECRETS.projects}/daemons`, [bearer(SECRETS.all)])).toBe(404);
  expect(await send(`/api/acme/projects?per_page=0&page=${SECRETS.all}`, [bearer(SECRETS.all)])).toBe(422);
  expect(
    await send(`/api/acme/projects?token=${SECRETS.all}&access_token=${SECRETS.projects}`, [bearer(SECRETS.all)]),
  ).toBe(200);
  expect(
    await send('/api/acme/projects', [
      bearer(SECRETS.all),
      ['Cookie', `session=${SECRETS.all}`],
      ['X-Api-Key', SECRETS.projects],
    ]),
  ).toBe(200);
  await proxy.set({ fault: 'refuse' });
  expect(await send('/api/acme/projects', [bearer(SECRETS.all)])).toBe(503);
  await proxy.set({ fault: 'throttle' });
  expect(await send('/api/acme/finances', [bearer(SECRETS.all)])).toBe(503);
  await proxy.set({ fault: 'reset', operations: ['Query'] });
  expect(await send('/api/acme/projects?page=1', [bearer(SECRETS.all)])).toBe(503);
  await proxy.pass();
  expect(await send('/api/acme/projects', [bearer(SECRETS.all)])).toBe(200);
  output = await server.stop();
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await proxy?.close();
});

/** Every line the functions wrote (stdout and stderr), but the harness's own. */
const logLines = () =>
  (output.stdout + output.stderr).split('\n').filter((line) => line.trim() !== '' && !line.startsWith('LISTENING '));

describe('what the functions log', () => {
  it('writes one JSON line per request, failures included, and nothing but JSON lines', () => {
    const lines = logLines().map((line) => JSON.parse(line) as Record<string, unknown>);
    const requests = lines.filter((line) => line.message === 'request');
    expect(requests.map((line) => line.status)).toEqual(statuses);
    expect(new Set(statuses)).toEqual(new Set([200, 401, 403, 404, 422, 503]));
    // Each 503 also has its error line: the error's name, nothing of the request.
    expect(lines.filter((line) => line.level === 'ERROR')).toHaveLength(statuses.filter((s) => s === 503).length);
  });

  it('never contains a token, in any encoding, in stdout or stderr', () => {
    const everything = output.stdout + output.stderr;
    for (const secret of ALL_SECRETS) {
      for (const form of [
        secret,
        secret.slice(4),
        Buffer.from(secret).toString('base64'),
        encodeURIComponent(secret),
      ]) {
        expect(everything, `a token (${form.slice(0, 12)}...) was logged`).not.toContain(form);
      }
      // Its hash is the key it is stored under: a log needs neither.
      expect(everything).not.toContain(createHash('sha256').update(secret).digest('hex'));
    }
  });

  it('never contains an Authorization header, a Bearer scheme, a cookie or the request headers', () => {
    const everything = (output.stdout + output.stderr).toLowerCase();
    for (const word of ['authorization', 'bearer', 'basic ', 'cookie', 'x-api-key', 'session='])
      expect(everything).not.toContain(word);
  });
});
