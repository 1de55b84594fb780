import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToken, revoke } from '../../commands/tokens/tokens.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument, scanAll, type TestTable } from '../support/dynamodb.ts';
import { FUZZ_SEED } from '../support/fuzz.ts';
import { NODE, ROOT } from '../support/import-process.ts';
import { buildRequest, rawRequest } from '../support/raw-http.ts';
import { projects, snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * Secrets at rest and at the door: after imports, `token create` (library and command line) and
 * a revocation, no plaintext token is anywhere in the table, only its SHA-256; and a wrong token
 * gets the same answer whichever part of it is wrong.
 */
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
let drawn = 0;
/** 32 characters shaped like a token's random part, drawn from the suite's seed: a rerun uses the same ones. */
const random = () => createHash('sha256').update(`secrets ${FUZZ_SEED} ${++drawn}`).digest('base64url').slice(0, 32);

/** Secrets from snapshots: shaped like real ones, and the odd printable ones a snapshot may hold. */
const IMPORTED = [
  `tra_${random()}`,
  `tra_${random()}`,
  `p@ss:w0rd!{${random()}}`,
  `"quoted"\\${random()}`,
  `${random()}=`,
];
const secrets: string[] = [...IMPORTED];

let table: TestTable;
let api: TestApi;

function tokenCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(NODE, ['commands/token.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, TABLE_NAME: table.tableName, DYNAMODB_ENDPOINT: table.endpoint },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

beforeAll(async () => {
  table = await freshTable();
  const document = snapshot({
    teams: [team(1, 'acme'), team(2, 'globex')],
    users: [user(10, [1]), user(11, [2])],
    tokens: IMPORTED.map((secret, i) =>
      token(
        i % 2 === 0 ? 10 : 11,
        secret,
        i === 1 ? ['projects:read'] : ['*'],
        i === 4 ? { expires_at: '2020-01-01T00:00:00Z' } : {},
      ),
    ),
    projects: projects(1, 3),
  });
  // Imported twice (tokens upserted), then tokens issued by the library and by the CLI.
  await importDocument(table, document);
  await importDocument(table, document);
  for (const abilities of [['*'], ['finances:read', 'daemons:read']]) {
    secrets.push(
      await createToken(table.doc, table.tableName, { userId: 10, abilities, name: 'lib', expiresAt: null }),
    );
  }
  const cli = await tokenCli([
    'create',
    '--user',
    '11',
    '--abilities',
    'projects:read',
    '--name',
    'cli',
    '--expires-in',
    '30d',
  ]);
  expect(cli.code, cli.stderr).toBe(0);
  secrets.push(cli.stdout.trim());
  expect(await revoke(table.doc, table.tableName, { secret: secrets.at(-2)! })).toBeDefined();
  api = await startApi(table);
}, 60_000);
afterAll(() => api?.close());

/** Every string in an item: attribute names, values, set and list members, nested maps. */
function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (typeof value === 'number' || typeof value === 'bigint') out.push(String(value));
  else if (value instanceof Uint8Array)
    out.push(Buffer.from(value).toString('latin1'), Buffer.from(value).toString('utf8'));
  else if (value instanceof Set || Array.isArray(value)) for (const v of value) strings(v, out);
  else if (typeof value === 'object' && value !== null) {
    for (const [key, v] of Object.entries(value)) {
      out.push(key);
      strings(v, out);
    }
  }
  return out;
}

describe('tokens at rest', () => {
  it('stores no plaintext token anywhere in the table, in any common encoding', async () => {
    expect(secrets).toHaveLength(8);
    const everything = (await scanAll(table)).flatMap((item) => strings(item));
    expect(everything.length).toBeGreaterThan(50);
    for (const secret of secrets) {
      const forms = [
        secret,
        Buffer.from(secret).toString('base64'),
        Buffer.from(secret).toString('hex'),
        encodeURIComponent(secret),
      ];
      for (const form of forms) {
        const found = everything.filter((text) => text.includes(form));
        expect(found, `token ${secret.slice(0, 8)}... stored as ${form.slice(0, 12)}...`).toEqual([]);
      }
    }
  });

  it('stores each token under its SHA-256 hash, and nothing else that names it', async () => {
    const items = await scanAll(table);
    const tokenItems = items.filter((item) => String(item.pk).startsWith('TOKEN#'));
    expect(tokenItems.map((item) => item.pk).sort()).toEqual(secrets.map((s) => `TOKEN#${sha256(s)}`).sort());
    for (const item of tokenItems) expect(item.sk).toBe('TOKEN');
  });
});

describe('token lookup', () => {
  const valid = () => IMPORTED[0]!;
  /** Status, headers (but Date) and body of a request, byte for byte, over a raw socket. */
  async function answer(authorization: string) {
    const port = api.server.port;
    const res = await rawRequest(
      port,
      buildRequest({ target: '/api/acme/projects', headers: [['Authorization', authorization]] }, `127.0.0.1:${port}`),
    );
    return { status: res.status, headers: res.headerLines.filter((line) => !/^date:/i.test(line)), body: res.body };
  }

  it('answers a token wrong in its first character exactly as one wrong in its last', async () => {
    const secret = valid();
    expect((await api.get('/api/acme/projects', { token: secret })).status).toBe(200);
    const flip = (c: string) => (c === 'A' ? 'B' : 'A');
    const first = await answer(`Bearer ${flip(secret[0]!)}${secret.slice(1)}`);
    const last = await answer(`Bearer ${secret.slice(0, -1)}${flip(secret.at(-1)!)}`);
    expect(first.status).toBe(401);
    expect(first.body).toBe('{"message":"Unauthenticated."}');
    expect(last).toEqual(first);
  });

  it('answers every kind of wrong token identically: altered, cut, extended, unknown, expired, revoked, the hash itself', async () => {
    const secret = valid();
    const variants = {
      middle: `${secret.slice(0, 20)}${secret[20] === 'x' ? 'y' : 'x'}${secret.slice(21)}`,
      cut: secret.slice(0, -1),
      extended: `${secret}x`,
      prefixOnly: 'tra_',
      unknown: `tra_${random()}`,
      expired: IMPORTED[4]!,
      revoked: secrets.at(-2)!,
      hash: sha256(secret),
      storedKey: `TOKEN#${sha256(secret)}`,
      otherCase: secret.toUpperCase(),
    };
    const reference = await answer(`Bearer tra_${random()}`);
    for (const [kind, wrong] of Object.entries(variants)) {
      expect(await answer(`Bearer ${wrong}`), kind).toEqual(reference);
    }
  });
});
