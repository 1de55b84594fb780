import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../shared/auth/token.ts';
import { TeamReader } from '../../shared/store/team-reader.ts';
import { freePort } from '../../commands/local/dynamodb-local.ts';
import { freshTable, importDocument, scanAll, type TestTable } from '../support/dynamodb.ts';
import { projects, snapshot, team, token, user } from '../support/snapshots.ts';

/** Contract section 8: the commands, run as a user runs them (Node 24 is process.execPath under npm). */
const ROOT = new URL('../..', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'commands-'));
let table: TestTable;

function run(script: string, args: string[], env: Record<string, string | undefined> = {}) {
  const result = spawnSync(process.execPath, [join(ROOT, script), ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TABLE_NAME: table.tableName, DYNAMODB_ENDPOINT: table.endpoint, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function writeJson(name: string, value: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
}

beforeAll(async () => {
  table = await freshTable();
});

describe('npm run import', () => {
  it('imports a valid snapshot and says what it imported', async () => {
    const file = writeJson('ok.json', snapshot({ teams: [team(1, 'acme')], users: [user(10, [1])], projects: projects(1, 12) }));
    const { code, stdout } = run('commands/import.ts', [file]);
    expect(code).toBe(0);
    expect(stdout).toContain('imported 1 teams (12 projects and daemons), 1 users and 0 tokens');
  });

  it('rejects an invalid snapshot whole: exit 1, a message per problem, nothing written', async () => {
    const before = await scanAll(table);
    const file = writeJson('bad.json', {
      teams: [team(1, 'acme'), team(2, '123')],
      projects: [...projects(1, 5), { ...projects(1, 1, 1234)[0], created_at: 'yesterday' }, { ...projects(9, 1, 77)[0] }],
      costs: [{ team_id: 1, label: 'Backups', amount: '-5', currency: 'eur' }],
    });
    const { code, stderr } = run('commands/import.ts', [file]);
    expect(code).toBe(1);
    expect(stderr).toContain('nothing was imported');
    expect(stderr).toContain('teams[1] (id 2): slug must not be all digits');
    expect(stderr).toContain('projects[5] (id 1234): created_at is not an ISO 8601 time');
    expect(stderr).toContain('costs[0]: amount must not be negative');
    expect(stderr).toContain('costs[0]: currency is not a currency code of 3 capital letters');
    expect(await scanAll(table)).toEqual(before);
  });

  it('reports references that do not resolve, naming the record', async () => {
    const file = writeJson('refs.json', { teams: [team(1, 'acme')], projects: projects(2, 1, 55) });
    const { code, stderr } = run('commands/import.ts', [file]);
    expect(code).toBe(1);
    expect(stderr).toContain('projects[0] (id 55): team_id 2 is not a team of the snapshot');
  });

  it('rejects a file that is not JSON, or not an object', async () => {
    expect(run('commands/import.ts', [writeJson('text.json', 'not json')]).stderr).toMatch(/is not valid JSON/);
    const array = run('commands/import.ts', [writeJson('array.json', [])]);
    expect(array.code).toBe(1);
    expect(array.stderr).toContain('the snapshot must be a JSON object');
  });

  it('says which file it cannot read, and what TABLE_NAME is for', () => {
    expect(run('commands/import.ts', [join(dir, 'missing.json')]).stderr).toContain('cannot read');
    const noTable = run('commands/import.ts', ['x.json'], { TABLE_NAME: undefined });
    expect(noTable.code).toBe(1);
    expect(noTable.stderr).toContain('TABLE_NAME is not set');
  });
});

describe('npm run token', () => {
  beforeAll(async () => {
    await importDocument(table, snapshot({ teams: [team(5, 'tokens-team')], users: [user(50, [5])], tokens: [token(50, 'seeded-token')] }));
  });
  const reader = () => new TeamReader(table.client, { tableName: table.tableName });

  it('creates a token, prints it once on stdout, and stores only its hash', async () => {
    const { code, stdout, stderr } = run('commands/token.ts', ['create', '--user', '50', '--abilities', 'projects:read,daemons:read', '--name', 'ci']);
    expect(code).toBe(0);
    const secret = stdout.trim();
    expect(secret).toMatch(/^tra_[A-Za-z0-9_-]{43}$/);
    expect(stderr).not.toContain(secret);
    const stored = await reader().readAccess(hashToken(secret), 'tokens-team');
    expect(stored.token).toMatchObject({ userId: 50, abilities: ['projects:read', 'daemons:read'], expiresAt: null, revokedAt: null });
    expect(JSON.stringify(await scanAll(table))).not.toContain(secret);
  });

  it('sets an expiry from --expires-in', async () => {
    const before = Date.now();
    const { stdout } = run('commands/token.ts', ['create', '--user', '50', '--abilities', '*', '--expires-in', '90d']);
    const { token: stored } = await reader().readAccess(hashToken(stdout.trim()), 'x');
    const expires = Date.parse(stored!.expiresAt!);
    expect(expires - before).toBeGreaterThan(90 * 86_400_000 - 60_000);
    expect(expires - before).toBeLessThan(90 * 86_400_000 + 60_000);
    expect(stored!.expiresAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/);
  });

  it('lists a user\'s tokens without their secrets', () => {
    const { stdout: secret } = run('commands/token.ts', ['create', '--user', '50', '--abilities', 'finances:read', '--name', 'listed']);
    const { code, stdout } = run('commands/token.ts', ['list', '--user', '50']);
    expect(code).toBe(0);
    expect(stdout).toContain(hashToken(secret.trim()));
    expect(stdout).toMatch(/active\s+listed\s+finances:read/);
    expect(stdout).not.toContain(secret.trim());
    expect(stdout).not.toContain('seeded-token');
  });

  it('revokes by secret and by id; a revoked token no longer authenticates', async () => {
    const a = run('commands/token.ts', ['create', '--user', '50', '--abilities', '*']).stdout.trim();
    const b = run('commands/token.ts', ['create', '--user', '50', '--abilities', '*']).stdout.trim();
    expect(run('commands/token.ts', ['revoke', a]).code).toBe(0);
    expect(run('commands/token.ts', ['revoke', '--id', hashToken(b)]).code).toBe(0);
    for (const secret of [a, b]) expect((await reader().readAccess(hashToken(secret), 'x')).token?.revokedAt).toBeTruthy();
    expect(run('commands/token.ts', ['list', '--user', '50']).stdout).toMatch(/revoked/);
  });

  it.each([
    [['create', '--user', '999', '--abilities', '*'], 'user 999 does not exist'],
    [['create', '--user', '50', '--abilities', 'projects:write'], 'unknown ability: projects:write'],
    [['create', '--user', '50'], '--abilities is required'],
    [['create', '--user', 'x', '--abilities', '*'], '--user must be a user id'],
    [['create', '--user', '50', '--abilities', '*', '--expires-in', 'soon'], '--expires-in must look like 90d'],
    [['revoke', 'no-such-token'], 'no such token'],
    [['frobnicate'], 'usage:'],
  ])('refuses %j with a clear message and exit 1', (args, message) => {
    const { code, stderr } = run('commands/token.ts', args);
    expect(code).toBe(1);
    expect(stderr).toContain(message);
  });
});

describe('npm run invoke', () => {
  it.each(['finances', 'daemons', 'projects'])('runs the %s function with its sample event and prints its result', async (name) => {
    const invokeTable = await freshTable();
    expect(run('commands/import.ts', [join(ROOT, 'data/demo-snapshot.json')], { TABLE_NAME: invokeTable.tableName }).code).toBe(0);
    const { code, stdout } = run('commands/invoke.ts', [name, '--event', join(ROOT, `events/${name}.json`)], { TABLE_NAME: invokeTable.tableName });
    expect(code).toBe(0);
    const result = JSON.parse(stdout) as { statusCode: number; body: string };
    expect(result.statusCode).toBe(200);
    const body = JSON.parse(result.body) as { data: unknown[]; meta: unknown };
    expect(body.data.length).toBeGreaterThan(0);
  });

  it('says how to call it when the function or event is missing', () => {
    const { code, stderr } = run('commands/invoke.ts', ['servers']);
    expect(code).toBe(1);
    expect(stderr).toContain('usage: npm run invoke -- <finances|daemons|projects> --event <event.json>');
  });
});

describe('npm start', () => {
  /** Starts commands/start.ts and resolves once it printed its banner. */
  async function start(args: string[], env: Record<string, string | undefined> = {}) {
    const child = spawn(process.execPath, [join(ROOT, 'commands/start.ts'), ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { out += chunk.toString(); });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        if (out.includes('Ctrl-C stops')) { clearInterval(timer); resolve(); }
        if (child.exitCode !== null) { clearInterval(timer); reject(new Error(`start exited: ${out}`)); }
      }, 100);
    });
    return { child, output: () => out, exited };
  }

  it('starts DynamoDB Local, imports the demo data, prints a working token and curl line, and stops cleanly on Ctrl-C', async () => {
    const port = await freePort();
    const { child, output, exited } = await start(['--port', String(port)]);
    const text = output();
    const secret = /demo token[^\n]*\n\s+(tra_\S+)/.exec(text)?.[1];
    const url = /curl -s -H "Authorization: Bearer \S+" (\S+)/.exec(text)?.[1];
    expect(secret).toBeDefined();
    expect(url).toBe(`http://127.0.0.1:${port}/api/acme/projects?per_page=5`);
    const res = await fetch(url!, { headers: { Authorization: `Bearer ${secret}` } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { results: number }).results).toBe(5);

    const dynamoPort = /at http:\/\/127\.0\.0\.1:(\d+)\)/.exec(text)?.[1];
    expect(dynamoPort).toBeDefined();
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    // Neither the API nor DynamoDB Local is left behind.
    await expect(fetch(url!)).rejects.toThrow();
    expect(spawnSync('pgrep', ['-f', `DynamoDBLocal.jar.*-port ${dynamoPort}`]).status).toBe(1);
  }, 90_000);

  it('serves another port and another snapshot into an already running endpoint, stopping on SIGTERM', async () => {
    const port = await freePort();
    const file = writeJson('start.json', snapshot({ teams: [team(7, 'seven')], users: [user(70, [7])], projects: projects(7, 3) }));
    const tableName = `start-${port}`;
    const { child, output, exited } = await start(['--port', String(port), '--data', file], { DYNAMODB_ENDPOINT: table.endpoint, TABLE_NAME: tableName });
    const secret = /demo token[^\n]*\n\s+(tra_\S+)/.exec(output())?.[1];
    const res = await fetch(`http://127.0.0.1:${port}/api/seven/projects`, { headers: { Authorization: `Bearer ${secret}` } });
    expect(((await res.json()) as { meta: { total: number } }).meta.total).toBe(3);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 60_000);

  it('refuses an invalid --data snapshot before starting anything', async () => {
    const file = writeJson('bad-start.json', { teams: [{ id: 'one' }] });
    const result = run('commands/start.ts', ['--port', '0', '--data', file], { DYNAMODB_ENDPOINT: undefined, TABLE_NAME: undefined });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('teams[0] (id "one"): id must be a positive integer');
  });
});
