import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/log.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument } from '../support/dynamodb.ts';
import { projects, snapshot, team, token, user } from '../support/snapshots.ts';

/** Structured logs: one JSON line per request, with the fields an operator searches by. */
let api: TestApi;
const lines: string[] = [];
const write = process.stdout.write.bind(process.stdout);

beforeAll(async () => {
  const table = await freshTable();
  await importDocument(table, snapshot({ teams: [team(1, 'acme')], users: [user(10, [1])], tokens: [token(10, 'log-secret-token')], projects: projects(1, 3) }));
  api = await startApi(table, { LOG_LEVEL: 'INFO' });
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    const text = String(chunk);
    // Capture log lines; let vitest's own output through.
    if (text.startsWith('{')) lines.push(text);
    else return write(chunk, ...rest);
    return true;
  }) as typeof process.stdout.write;
});
afterAll(async () => {
  process.stdout.write = write;
  await api.close();
});

const requestLines = () => lines.flatMap((line) => line.split('\n')).filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>).filter((l) => l.message === 'request');

describe('request logs', () => {
  it('writes exactly one line per request, with request id, route, team, status, duration and cold start', async () => {
    const statuses = [
      (await api.get('/api/acme/projects', { token: 'log-secret-token' })).status,
      (await api.get('/api/acme/projects?per_page=0', { token: 'log-secret-token' })).status,
      (await api.get('/api/acme/projects', { token: 'wrong' })).status,
      (await api.get('/api/nope/finances', { token: 'log-secret-token' })).status,
    ];
    expect(statuses).toEqual([200, 422, 401, 404]);
    const logged = requestLines();
    expect(logged.map((l) => l.status)).toEqual(statuses);
    expect(logged.map((l) => l.route)).toEqual(['GET /api/{team}/projects', 'GET /api/{team}/projects', 'GET /api/{team}/projects', 'GET /api/{team}/finances']);
    // The resolved team id, or null: never the raw path segment.
    expect(logged.map((l) => l.team ?? null)).toEqual([1, 1, null, null]);
    for (const line of logged) {
      expect(line).toMatchObject({ level: 'INFO', service: 'team-resources-api' });
      expect(line.function_request_id).toEqual(expect.any(String));
      expect(line.apiRequestId).toEqual(expect.any(String));
      expect(line.durationMs).toEqual(expect.any(Number));
      expect(line.cold_start).toEqual(expect.any(Boolean));
    }
    // Each function's first request is its cold start.
    expect(logged.map((l) => l.cold_start)).toEqual([true, false, false, true]);
  });

  it('logs no path segment that named no team: a token pasted into the path stays out', async () => {
    const before = lines.length;
    await api.get('/api/tra_pasted-by-mistake/projects', { token: 'log-secret-token' });
    expect(lines.slice(before).join('')).not.toContain('tra_pasted-by-mistake');
  });

  it('never logs a token or an Authorization header', () => {
    const all = lines.join('');
    expect(all).not.toContain('log-secret-token');
    expect(all).not.toContain('wrong');
    expect(all.toLowerCase()).not.toContain('authorization');
    expect(all.toLowerCase()).not.toContain('bearer');
  });

  it('takes its level from LOG_LEVEL', () => {
    const saved = process.env.LOG_LEVEL;
    const before = lines.length;
    process.env.LOG_LEVEL = 'ERROR';
    createLogger().info('info when the level is ERROR');
    process.env.LOG_LEVEL = 'DEBUG';
    createLogger().debug('debug when the level is DEBUG');
    process.env.LOG_LEVEL = saved;
    const written = lines.slice(before).join('');
    expect(written).not.toContain('info when the level is ERROR');
    expect(written).toContain('debug when the level is DEBUG');
  });
});
