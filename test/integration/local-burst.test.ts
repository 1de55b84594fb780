import { mkdtempSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../commands/local/dynamodb-local.ts';
import { NODE, ROOT } from '../support/import-process.ts';
import { startCommand, type CommandProcess } from '../support/processes.ts';
import { projects, snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * docs/commands.md, npm start: the local server runs the functions as Lambda does, each request in
 * a container of its own while it runs (commands/local/containers.ts), so a burst gets what a
 * deployed API gives, never a 503 the client's own socket pool made; requests held during
 * start-up are all answered once it is ready; and each access line is about its own request.
 * The real command, with the suite's DynamoDB Local (DYNAMODB_ENDPOINT) and the functions logging.
 */
const dir = mkdtempSync(join(tmpdir(), 'local-burst-'));
const data = join(dir, 'small.json');
const TOKEN = 'burst-token-secret';
writeFileSync(
  data,
  JSON.stringify(
    snapshot({
      teams: [team(1, 'acme')],
      users: [user(10, [1])],
      tokens: [token(10, TOKEN)],
      projects: projects(1, 30),
    }),
  ),
);
const READY = 'Ctrl-C (or SIGTERM, SIGHUP) stops the API';

let command: CommandProcess | undefined;
afterAll(async () => {
  if (command && command.child.exitCode === null) command.child.kill('SIGTERM');
  await command?.exited;
});

/** A fresh connection per request, as 1,000 clients would have. */
const agent = new Agent({ keepAlive: false, maxSockets: Infinity });

/**
 * One GET with the snapshot's token, tried again while nothing listens yet (the port opens first
 * thing, but not before the process runs). Says the status, and whether the connection was made
 * before the server said it was ready.
 */
function get(url: string): Promise<{ status: number; beforeReady: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, headers: { Authorization: `Bearer ${TOKEN}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, beforeReady }));
    });
    let beforeReady = false;
    req.on('socket', (socket) => socket.once('connect', () => (beforeReady = !command!.output().includes(READY))));
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ECONNREFUSED') return reject(error);
      setTimeout(() => get(url).then(resolve, reject), 50);
    });
    req.end();
  });
}

const accessLines = () =>
  command!
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.message === 'request');

describe('npm start under a burst', () => {
  it('answers every request held during start-up, and a burst of 1,000, with 200s, each logged apart', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/api/acme/projects?per_page=5`;
    command = startCommand(NODE, ['commands/start.ts', '--port', String(port), '--data', data], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE,
        DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
        TABLE_NAME: `burst-${port}`,
        LOG_LEVEL: 'info',
      },
    });

    const held = await Promise.all(Array.from({ length: 300 }, () => get(url)));
    expect(held.filter((answer) => answer.beforeReady).length).toBeGreaterThan(0);
    expect(held.filter((answer) => answer.status !== 200)).toEqual([]);

    const burst = await Promise.all(Array.from({ length: 1_000 }, () => get(url)));
    expect(burst.filter((answer) => answer.status !== 200)).toEqual([]);

    // Every line written: the functions' stdout reaches the command's a moment after each answer.
    await expect.poll(() => accessLines().length, { timeout: 30_000 }).toBe(1_300);
    const lines = accessLines();
    expect(lines.every((line) => line.status === 200)).toBe(true);
    // Each access line is about its own request: as many request ids as requests, and the Lambda
    // request id the one API Gateway gave it. (A container serves one request at a time, so this
    // holds whatever shared/api/log.ts keeps at module scope.)
    expect(new Set(lines.map((line) => line.function_request_id)).size).toBe(1_300);
    expect(lines.every((line) => line.function_request_id === line.apiRequestId)).toBe(true);
    // A container's first request is its cold start, in both the logger's field and the metric.
    expect(lines.every((line) => (line.cold_start === true) === (line.ColdStart === 1))).toBe(true);
  }, 180_000);
});
