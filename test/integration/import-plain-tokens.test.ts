import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE, ROOT } from '../support/import-process.ts';
import { snapshot, team, token, user } from '../support/snapshots.ts';
import { snapshotFile } from '../support/validate.ts';

/**
 * docs/contract.md, section 7: an import into a table on AWS refuses a snapshot that holds
 * plain-text tokens, naming them and the endpoint, unless --allow-plain-tokens, and before it calls
 * anything. "On AWS" is the endpoint really called (commands/cli/database.ts): DYNAMODB_ENDPOINT,
 * else AWS_ENDPOINT_URL_DYNAMODB or AWS_ENDPOINT_URL, else AWS's regional endpoint.
 *
 * No AWS here: fake credentials, and a local socket that counts the connections it gets. Where an
 * import must go on to an AWS host, the child's DNS look-ups of AWS's names answer 127.0.0.1 (a
 * preload that replaces dns.lookup), so it reaches that socket instead of the network.
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
const port = () => (server.address() as AddressInfo).port;

const AWS_NAMES_ARE_LOCAL = `data:text/javascript,${encodeURIComponent(`
import dns from 'node:dns';
const lookup = dns.lookup;
dns.lookup = (host, options, callback) =>
  /amazonaws\\.com$/.test(host) ? lookup('127.0.0.1', options, callback) : lookup(host, options, callback);
`)}`;

/** The import with `settings`; stopped once it reaches the socket, unless `toTheEnd`. */
function runImport(
  file: string,
  settings: Record<string, string>,
  flags: string[] = [],
  { awsNamesLocal = false, toTheEnd = false } = {},
) {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: '/nonexistent', // no ~/.aws of the machine's
    TABLE_NAME: 'team-resources',
    AWS_ACCESS_KEY_ID: 'AKIDFAKEFAKEFAKE',
    AWS_SECRET_ACCESS_KEY: 'fake',
    ...settings,
    ...(awsNamesLocal && { NODE_OPTIONS: `--import=${AWS_NAMES_ARE_LOCAL}` }),
  };
  const child = spawn(NODE, ['commands/import.ts', file, ...flags], { cwd: ROOT, env, stdio: 'pipe' });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // Once the import has reached the endpoint, that is all a test needs to know.
  onConnection = () => toTheEnd || child.kill();
  return new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.once('close', (code) => resolve({ code, stderr })),
  );
}

const withPlainTokens = snapshot({
  teams: [team(1, 'acme')],
  users: [user(10, [1]), user(11, [1])],
  tokens: [token(10, 'public-demo-secret'), token(11, 'another-demo-secret')],
});
const HELD = 'the snapshot holds 2 plain-text tokens, whose secrets are in the file; an import into a table on AWS';

describe('an import into a table on AWS', () => {
  it.each([
    [
      'no endpoint set: AWS in AWS_REGION',
      { AWS_REGION: 'eu-west-1' },
      'AWS at https://dynamodb.eu-west-1.amazonaws.com (region eu-west-1), table team-resources',
    ],
    [
      'DYNAMODB_ENDPOINT at AWS',
      { DYNAMODB_ENDPOINT: 'https://dynamodb.eu-west-1.amazonaws.com', AWS_REGION: 'eu-west-1' },
      'DYNAMODB_ENDPOINT=https://dynamodb.eu-west-1.amazonaws.com, table team-resources',
    ],
    [
      'AWS_ENDPOINT_URL_DYNAMODB at AWS (dual-stack)',
      { AWS_ENDPOINT_URL_DYNAMODB: 'https://dynamodb.eu-west-1.api.aws', AWS_REGION: 'eu-west-1' },
      'AWS_ENDPOINT_URL_DYNAMODB=https://dynamodb.eu-west-1.api.aws, table team-resources',
    ],
    [
      'AWS_ENDPOINT_URL at AWS in China',
      { AWS_ENDPOINT_URL: 'https://dynamodb.cn-north-1.amazonaws.com.cn', AWS_REGION: 'cn-north-1' },
      'AWS_ENDPOINT_URL=https://dynamodb.cn-north-1.amazonaws.com.cn, table team-resources',
    ],
  ])('%s: refuses plain-text tokens, naming them and the endpoint, before any call', async (_, settings, where) => {
    connections = 0;
    const result = await runImport(await snapshotFile(withPlainTokens), settings, [], { awsNamesLocal: true });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${HELD} (${where}) refuses them\n`);
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
      const endpoint = `https://dynamodb.eu-west-1.amazonaws.com:${port()}`;
      const settings = { DYNAMODB_ENDPOINT: endpoint, AWS_REGION: 'eu-west-1' };
      await runImport(await snapshotFile(document), settings, [...flags], { awsNamesLocal: true });
      expect(connections).toBeGreaterThan(0);
    }
  });
});

describe('an import into a local endpoint the SDK names', () => {
  it.each(['AWS_ENDPOINT_URL_DYNAMODB', 'AWS_ENDPOINT_URL'])(
    '%s at a local listener: plain tokens go on, and messages name it, never an AWS region',
    async (setting) => {
      connections = 0;
      const endpoint = `http://127.0.0.1:${port()}`;
      // To the end: the import fails on its own, and its message is read.
      const settings = { [setting]: endpoint, AWS_REGION: 'eu-west-1' };
      const result = await runImport(await snapshotFile(withPlainTokens), settings, [], { toTheEnd: true });
      expect(connections).toBeGreaterThan(0);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`(${setting}=${endpoint}, table team-resources)`);
      expect(result.stderr).not.toMatch(/AWS region|refuses them/);
    },
    60_000,
  );
});
