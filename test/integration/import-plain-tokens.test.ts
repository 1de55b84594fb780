import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE, ROOT } from '../support/import-process.ts';
import { snapshot, team, token, user } from '../support/snapshots.ts';
import { snapshotFile } from '../support/validate.ts';

/**
 * An import into a table on AWS (no DYNAMODB_ENDPOINT) refuses a snapshot that
 * holds plain-text tokens, naming them, unless --allow-plain-tokens, and before it contacts AWS.
 * No AWS here: fake credentials, and the SDK's own endpoint setting pointed at a local socket that
 * counts the connections it gets (the SDK honours AWS_ENDPOINT_URL_DYNAMODB).
 */
let connections = 0;
let onConnection = () => {};
const server = createServer((socket) => {
  connections++;
  socket.destroy();
  onConnection();
});
beforeAll(() => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve)));
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function importIntoAws(file: string, ...flags: string[]) {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TABLE_NAME: 'team-resources',
    AWS_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'AKIDFAKEFAKEFAKE',
    AWS_SECRET_ACCESS_KEY: 'fake',
    AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
  };
  delete env.DYNAMODB_ENDPOINT;
  const child = spawn(NODE, ['commands/import.ts', file, ...flags], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // Once the import has reached the endpoint, that is all a test needs to know.
  onConnection = () => child.kill();
  return new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.once('close', (code) => resolve({ code, stderr })),
  );
}

const withPlainTokens = snapshot({
  teams: [team(1, 'acme')],
  users: [user(10, [1]), user(11, [1])],
  tokens: [token(10, 'public-demo-secret'), token(11, 'another-demo-secret')],
});

describe('an import into a table on AWS', () => {
  it('refuses plain-text tokens, naming them, before any call to AWS', async () => {
    connections = 0;
    const result = await importIntoAws(await snapshotFile(withPlainTokens));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'the snapshot holds 2 plain-text tokens, whose secrets are in the file; an import into a table on AWS refuses them',
    );
    expect(result.stderr).toContain('tokens[0] (user 10)');
    expect(result.stderr).toContain('tokens[1] (user 11)');
    expect(result.stderr).toContain('--allow-plain-tokens');
    expect(result.stderr).not.toContain('public-demo-secret');
    expect(connections).toBe(0);
  });

  it('goes on to AWS with --allow-plain-tokens, as it does for a snapshot without tokens', async () => {
    for (const [document, flags] of [
      [withPlainTokens, ['--allow-plain-tokens']],
      [snapshot({ teams: [team(1, 'acme')] }), []],
    ] as const) {
      connections = 0;
      await importIntoAws(await snapshotFile(document), ...flags);
      expect(connections).toBeGreaterThan(0);
    }
  });
});
