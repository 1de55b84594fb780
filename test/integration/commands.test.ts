import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../shared/api/bearer.ts';
import { tokenKey } from '../../shared/table/keys.ts';
import { TeamReader } from '../../shared/api/team-reader.ts';
import { freePort } from '../../commands/local/dynamodb-local.ts';
import { freshTable, importDocument, scanAll, type TestTable } from '../support/dynamodb.ts';
import { startCommand } from '../support/processes.ts';
import { projects, snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * docs/contract.md, section 8: the commands, run as a user runs them, each in a process of its own
 * (Node 24 is process.execPath under npm). npm runs a script from the project root and says
 * where the user was in INIT_CWD; `run` does the same when given `from`.
 */
const ROOT = new URL('../..', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'commands-'));
let table: TestTable;

interface RunOptions {
  env?: Record<string, string | undefined>;
  /** The directory the user ran the command in (INIT_CWD); the process itself runs in the project root. */
  from?: string;
}

function run(script: string, args: string[], options: RunOptions = {}) {
  const result = spawnSync(process.execPath, [join(ROOT, script), ...args], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE,
      TABLE_NAME: table.tableName,
      DYNAMODB_ENDPOINT: table.endpoint,
      ...(options.from ? { INIT_CWD: options.from } : {}),
      ...options.env,
    },
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

/** Nothing a command prints is a stack trace or Node's own error text. */
function expectNoStackTrace(output: string) {
  expect(output).not.toMatch(/^\s+at /m);
  expect(output).not.toMatch(/node:internal|ERR_PARSE_ARGS/);
}

/** Raw control characters other than a line end: what would drive a terminal. */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

beforeAll(async () => {
  table = await freshTable();
});

describe('every command, as a process', () => {
  // Each command's --help, usage errors and malformed settings are executed in-process
  // (test/unit/command-line.test.ts); here the process prints them and exits with their code.
  it('--help prints the usage and the exit codes on stdout, exit 0', () => {
    const { code, stdout, stderr } = run('commands/invoke.ts', ['-h']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toMatch(/^usage: npm run invoke -- <finances\|daemons\|projects> --event <event\.json>/);
    expect(stdout).toMatch(/\nexit codes: 0 done, 1 failed \(the message says why\), 2 usage error\n$/);
  });

  it('a usage error is one line naming the problem, then the usage, on stderr; exit 2', () => {
    const { code, stdout, stderr } = run('commands/token.ts', ['create', '--user', 'x\u001b[2J', '--abilities', '*']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      [
        'npm run token: --user must be an id (a positive integer), not "x\\x1b[2J"',
        'usage: npm run token -- create --user <id> --abilities <a,b> [--name <name>] [--expires-in <90d|12h|30m>]',
        '       npm run token -- revoke <token>',
        '       npm run token -- revoke --id <id>',
        '       npm run token -- revoke --id <sanctum id> --user <id>',
        '       npm run token -- list --user <id>',
        '(npm run token -- --help for more)',
        '',
      ].join('\n'),
    );
  });

  it('a malformed setting is one line alone; exit 2', () => {
    const { code, stdout, stderr } = run('commands/start.ts', ['--port', '0'], {
      env: { DYNAMODB_ENDPOINT: 'localhost:8000' },
    });
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      'npm start: DYNAMODB_ENDPOINT is not an http(s) URL: "localhost:8000" (e.g. http://127.0.0.1:8000)\n',
    );
  });
});

describe('paths are relative to the directory the user ran the command in (INIT_CWD)', () => {
  const userDir = join(dir, 'elsewhere');
  mkdirSync(userDir);
  writeFileSync(
    join(userDir, 'mine.json'),
    JSON.stringify(snapshot({ teams: [team(31, 'relative')], users: [user(310, [31])], projects: projects(31, 2) })),
  );
  writeFileSync(join(userDir, 'invalid.json'), JSON.stringify({ teams: [{ id: 'one' }] }));
  writeFileSync(join(userDir, 'null-event.json'), 'null');

  it('npm run import -- mine.json', () => {
    const { code, stdout } = run('commands/import.ts', ['mine.json'], { from: userDir });
    expect(code).toBe(0);
    expect(stdout).toContain('imported 1 team (2 projects and daemons)');
    // From the project root, the same words name no file: a usage error saying where it looked.
    const fromRoot = run('commands/import.ts', ['mine.json'], { from: ROOT });
    expect(fromRoot.code).toBe(2);
    expect(fromRoot.stderr).toContain(`the snapshot: cannot read mine.json (${join(ROOT, 'mine.json')}): no such file`);
  });

  it("through npm itself, which sets INIT_CWD: npm run import -- mine.json from the user's directory", () => {
    const viaNpm = (args: string[]) =>
      spawnSync('npm', ['--prefix', ROOT, ...args], {
        cwd: userDir,
        env: {
          PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH}`,
          HOME: process.env.HOME,
          NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE,
          TABLE_NAME: table.tableName,
          DYNAMODB_ENDPOINT: table.endpoint,
        },
        encoding: 'utf8',
        timeout: 60_000,
      });
    const imported = viaNpm(['run', '-s', 'import', '--', 'mine.json']);
    expect(imported.status, imported.stderr).toBe(0);
    expect(imported.stdout).toContain('imported 1 team (2 projects and daemons)');
    // And the exit code of a usage error is what npm exits with.
    const usage = viaNpm(['start', '-s', '--', '--port', '99999']);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain('npm start: --port must be a port number from 0 to 65535, not "99999"');
    expectNoStackTrace(usage.stderr);
  });

  it("npm start -- --data invalid.json reads the user's file (and refuses it before starting anything)", () => {
    const { code, stderr } = run('commands/start.ts', ['--port', '0', '--data', 'invalid.json'], {
      from: userDir,
      env: { DYNAMODB_ENDPOINT: undefined },
    });
    expect(code).toBe(1);
    expect(stderr).toContain('teams[0] (id "one"): id must be a positive integer');
    expect(stderr).not.toContain('starting DynamoDB Local');
  });

  it('npm run invoke -- projects --event null-event.json', () => {
    const { stderr } = run('commands/invoke.ts', ['projects', '--event', 'null-event.json'], { from: userDir });
    expect(stderr).not.toContain('cannot read');
    expect(run('commands/invoke.ts', ['projects', '--event', 'null-event.json'], { from: ROOT }).code).toBe(2);
  });
});

describe('npm run import', () => {
  it('imports a valid snapshot and says what it imported', async () => {
    const file = writeJson(
      'ok.json',
      snapshot({ teams: [team(1, 'acme')], users: [user(10, [1])], projects: projects(1, 12) }),
    );
    const { code, stdout } = run('commands/import.ts', [file]);
    expect(code).toBe(0);
    expect(stdout).toContain('imported 1 team (12 projects and daemons), 1 user and 0 tokens');
  });

  it('says its counts singular or plural as they are, with thousands separated', () => {
    const one = writeJson(
      'one-of-each.json',
      snapshot({
        teams: [team(81, 'one-of-each')],
        users: [user(810, [81])],
        tokens: [token(810, 'one-of-each-secret')],
        projects: projects(81, 1),
      }),
    );
    expect(run('commands/import.ts', [one]).stdout).toBe(
      `imported 1 team (1 project or daemon), 1 user and 1 token into ${table.tableName}\n`,
    );
    const many = writeJson(
      'many.json',
      snapshot({
        teams: [team(82, 'many-a'), team(83, 'many-b')],
        users: [user(820, [82]), user(830, [83])],
        tokens: [token(820, 'many-secret-a'), token(830, 'many-secret-b')],
        projects: [...projects(82, 1_200), ...projects(83, 34)],
      }),
    );
    expect(run('commands/import.ts', [many]).stdout).toBe(
      `imported 2 teams (1,234 projects and daemons), 2 users and 2 tokens into ${table.tableName}\n`,
    );
    // 51 problems: 50 listed, then the one more.
    const invalid = writeJson('fifty-one.json', {
      teams: Array.from({ length: 51 }, (_, i) => team(i + 1, `${i + 1}`)),
    });
    const lines = run('commands/import.ts', [invalid]).stderr.trimEnd().split('\n');
    expect(lines[0]).toBe(`${invalid} is not a valid snapshot; nothing was imported. 51 problems:`);
    expect(lines.at(-1)).toBe('  … and 1 more problem');
    const single = writeJson('one-problem.json', { teams: [team(1, '1')] });
    expect(run('commands/import.ts', [single]).stderr).toContain('nothing was imported. 1 problem:\n');
  });

  it("says why it failed in the operator's words, without the error's class name (a file changed while validated)", async () => {
    // About 21 MB: it is still being validated when its modification time changes.
    const file = writeJson(
      'changing.json',
      snapshot({ teams: [team(91, 'changing')], users: [user(910, [91])], projects: projects(91, 160_000) }),
    );
    const command = startCommand(process.execPath, [join(ROOT, 'commands/import.ts'), file], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE,
        TABLE_NAME: table.tableName,
        DYNAMODB_ENDPOINT: table.endpoint,
      },
    });
    await command.waitFor('validating');
    utimesSync(file, new Date(), new Date('2001-01-01T00:00:00Z'));
    expect((await command.exited).code).toBe(1);
    expect(command.output()).toContain(
      '\nfailed: the snapshot file changed after it was validated (its size or modification time differs); no team was switched: run the import again\n',
    );
    expect(command.output()).not.toContain('SnapshotChanged');
  });

  it('rejects an invalid snapshot whole: exit 1, a message per problem, nothing written', async () => {
    const before = await scanAll(table);
    const file = writeJson('bad.json', {
      teams: [team(1, 'acme'), team(2, '123')],
      projects: [
        ...projects(1, 5),
        { ...projects(1, 1, 1234)[0], created_at: 'yesterday' },
        { ...projects(9, 1, 77)[0] },
      ],
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

  it("shows escape sequences in a snapshot's strings escaped, never raw", () => {
    // Invalid whichever way the import library reads it (a duplicate slug, and a slug or names with control characters).
    const file = writeJson('escapes.json', {
      teams: [
        { id: 1, slug: 'evil\u001b]0;pwned\u0007', name: 'Evil\u009b2J' },
        { id: 2, slug: 'evil\u001b]0;pwned\u0007', name: 'Two' },
      ],
      users: [{ id: 1, name: '\u001b[31mred', teams: [1] }],
    });
    const { code, stdout, stderr } = run('commands/import.ts', [file]);
    expect(code).toBe(1);
    expect(stderr).toContain('nothing was imported');
    expect(stdout + stderr).not.toMatch(RAW_CONTROL);
    expectNoStackTrace(stderr);
  });

  it('says which file it cannot read (a usage error), and uses the table team-resources without TABLE_NAME', () => {
    const missing = run('commands/import.ts', [join(dir, 'missing.json')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`the snapshot: cannot read ${join(dir, 'missing.json')}: no such file`);
    const noTable = run('commands/import.ts', [writeJson('tiny.json', { teams: [team(1, 'acme')] })], {
      env: { TABLE_NAME: undefined, DYNAMODB_ENDPOINT: 'http://127.0.0.1:1' },
    });
    expect(noTable.code).toBe(1);
    expect(noTable.stderr).toContain(
      'cannot reach DynamoDB (DYNAMODB_ENDPOINT=http://127.0.0.1:1, table team-resources): ' +
        'nothing accepts connections there (ECONNREFUSED)',
    );
  });

  it("says a TLS failure in one line naming the endpoint, without OpenSSL's internals (https to a plain HTTP endpoint)", () => {
    const endpoint = table.endpoint.replace(/^http:/, 'https:');
    const { code, stderr } = run('commands/token.ts', ['list', '--user', '50'], {
      env: { DYNAMODB_ENDPOINT: endpoint },
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(
      new RegExp(
        `^cannot reach DynamoDB \\(DYNAMODB_ENDPOINT=${endpoint.replace(/[.]/g, '\\.')}, table [^)]+\\): the TLS connection failed \\(EPROTO; an http endpoint written as https\\?\\): check that DYNAMODB_ENDPOINT points at a running DynamoDB-compatible endpoint\n$`,
      ),
    );
    expect(stderr).not.toMatch(/openssl|SSL routines/i);
  });
});

describe('npm run token', () => {
  beforeAll(async () => {
    await importDocument(
      table,
      snapshot({
        teams: [team(5, 'tokens-team')],
        users: [user(50, [5]), user(51, [5]), user(52, [5])],
        tokens: [token(50, 'seeded-token')],
      }),
    );
  });
  const reader = () => new TeamReader(table.client, { tableName: table.tableName });

  it('creates a token, prints it once on stdout, and stores only its hash', async () => {
    const { code, stdout, stderr } = run('commands/token.ts', [
      'create',
      '--user',
      '50',
      '--abilities',
      'projects:read,daemons:read',
      '--name',
      'ci',
    ]);
    expect(code).toBe(0);
    const secret = stdout.trim();
    expect(secret).toMatch(/^tra_[A-Za-z0-9_-]{43}$/);
    expect(stderr).not.toContain(secret);
    const stored = await reader().readTokenAndHead(hashToken(secret), 'tokens-team', 'projects');
    expect(stored.token).toMatchObject({
      userId: 50,
      abilities: ['projects:read', 'daemons:read'],
      expiresAt: null,
      revokedAt: null,
    });
    expect(JSON.stringify(await scanAll(table))).not.toContain(secret);
  });

  it('sets an expiry from --expires-in', async () => {
    const before = Date.now();
    const { stdout } = run('commands/token.ts', ['create', '--user', '50', '--abilities', '*', '--expires-in', '90d']);
    const { token: stored } = await reader().readTokenAndHead(hashToken(stdout.trim()), 'x', 'projects');
    const expires = Date.parse(stored!.expiresAt!);
    expect(expires - before).toBeGreaterThan(90 * 86_400_000 - 60_000);
    expect(expires - before).toBeLessThan(90 * 86_400_000 + 60_000);
    expect(stored!.expiresAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/);
  });

  it("lists a user's tokens without their secrets", () => {
    const { stdout: secret } = run('commands/token.ts', [
      'create',
      '--user',
      '50',
      '--abilities',
      'finances:read',
      '--name',
      'listed',
    ]);
    const { code, stdout } = run('commands/token.ts', ['list', '--user', '50']);
    expect(code).toBe(0);
    expect(stdout).toContain(hashToken(secret.trim()));
    expect(stdout).toMatch(/active\s+listed\s+finances:read/);
    expect(stdout).not.toContain(secret.trim());
    expect(stdout).not.toContain('seeded-token');
  });

  it('lists names holding terminal escape sequences escaped, never raw', async () => {
    const secret = run('commands/token.ts', [
      'create',
      '--user',
      '51',
      '--abilities',
      '*',
      '--name',
      'plain',
    ]).stdout.trim();
    // A name no command accepts any more, as an older tool or a hand edit may have left it.
    const evil = 'x\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202eevil';
    await table.doc.send(
      new UpdateCommand({
        TableName: table.tableName,
        Key: tokenKey(hashToken(secret)),
        UpdateExpression: 'SET #n = :n',
        ExpressionAttributeNames: { '#n': 'name' },
        ExpressionAttributeValues: { ':n': evil },
      }),
    );
    const { code, stdout } = run('commands/token.ts', ['list', '--user', '51']);
    expect(code).toBe(0);
    expect(stdout).not.toMatch(RAW_CONTROL);
    expect(stdout).not.toContain('\u202e');
    expect(stdout).toContain('x\\x1b]0;pwned\\x07\\x1b[2J\\u009b31m\\u202eevil');
  });

  it('lines its columns up whatever the status (inactive, as an unfinished import of the earlier layout left a token, too), the name and the abilities', async () => {
    const names = ['first', 'made-inactive', 'revoked-one'];
    const abilities = ['*', 'projects:read,daemons:read', 'finances:read'];
    const secrets = names.map((name, i) =>
      run('commands/token.ts', ['create', '--user', '52', '--abilities', abilities[i]!, '--name', name]).stdout.trim(),
    );
    await table.doc.send(
      new UpdateCommand({
        TableName: table.tableName,
        Key: tokenKey(hashToken(secrets[1]!)),
        UpdateExpression: 'SET inactive = :t',
        ExpressionAttributeValues: { ':t': true },
      }),
    );
    expect(run('commands/token.ts', ['revoke', secrets[2]!]).code).toBe(0);
    const [header, ...lines] = run('commands/token.ts', ['list', '--user', '52']).stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID +STATUS +NAME +ABILITIES +CREATED +EXPIRES +SANCTUM ID +REVOKED$/);
    expect(lines.map((line) => line.slice(66, 74).trimEnd()).sort()).toEqual(['active', 'inactive', 'revoked']);
    // The name column starts at one place on every line: after the id, the widest status, and two spaces each.
    for (const line of lines)
      expect(
        names.some((name) => line.indexOf(`  ${name}  `) === 74),
        line,
      ).toBe(true);
    // And so do the abilities and the dates (one format) after names and abilities of different lengths, under their headings.
    for (const column of ['CREATED', 'EXPIRES'])
      for (const line of lines)
        expect(line.slice(header!.indexOf(column)), line).toMatch(
          /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00|never) /,
        );
    expect(lines.find((line) => line.includes('revoked-one'))!.slice(header!.indexOf('REVOKED'))).toMatch(
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/,
    );
    expect(new Set(lines.map((line) => line.search(/\*|projects:read|finances:read/))).size, lines.join('\n')).toBe(1);
  });

  it('revokes by secret and by id; a revoked token no longer authenticates', async () => {
    const a = run('commands/token.ts', ['create', '--user', '50', '--abilities', '*']).stdout.trim();
    const b = run('commands/token.ts', ['create', '--user', '50', '--abilities', '*']).stdout.trim();
    expect(run('commands/token.ts', ['revoke', a]).code).toBe(0);
    expect(run('commands/token.ts', ['revoke', '--id', hashToken(b)]).code).toBe(0);
    for (const secret of [a, b])
      expect((await reader().readTokenAndHead(hashToken(secret), 'x', 'projects')).token?.revokedAt).toBeTruthy();
    expect(run('commands/token.ts', ['list', '--user', '50']).stdout).toMatch(/revoked/);
    // Revoking it again changes nothing, says since when, and is no failure (a script may repeat it).
    const again = run('commands/token.ts', ['revoke', a]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^already revoked at \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00; nothing changed\n$/);
  });

  it.each([
    [['create', '--user', '999', '--abilities', '*'], 'user 999 does not exist'],
    [['list', '--user', '999'], 'user 999 does not exist'],
    [['revoke', 'no-such-token'], 'no token with that secret'],
    [['revoke', '--id', 'ab'.repeat(32)], `no token with id ${'ab'.repeat(32)}`],
  ])('%j: an unknown id is an error, exit 1', (args, message) => {
    const { code, stdout, stderr } = run('commands/token.ts', args);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain(message);
    expect(stderr).not.toContain('no-such-token');
    expectNoStackTrace(stderr);
  });
});

describe('npm run invoke', () => {
  let invokeTable: TestTable;
  beforeAll(async () => {
    invokeTable = await freshTable();
    expect(
      run('commands/import.ts', [join(ROOT, 'data/demo-snapshot.json')], { env: { TABLE_NAME: invokeTable.tableName } })
        .code,
    ).toBe(0);
  });
  const invoke = (args: string[], env: Record<string, string | undefined> = {}) =>
    run('commands/invoke.ts', args, { env: { TABLE_NAME: invokeTable.tableName, ...env } });

  it.each(['finances', 'daemons', 'projects'])(
    'runs the %s function with its sample event and prints its result',
    (name) => {
      const { code, stdout } = invoke([name, '--event', join(ROOT, `events/${name}.json`)]);
      expect(code).toBe(0);
      const result = JSON.parse(stdout) as { statusCode: number; body: string };
      expect(result.statusCode).toBe(200);
      const body = JSON.parse(result.body) as { data: unknown[]; meta: unknown };
      expect(body.data.length).toBeGreaterThan(0);
    },
  );

  it('prints only the result on stdout, even with the function logging', () => {
    const { code, stdout, stderr } = invoke(['projects', '--event', join(ROOT, 'events/projects.json')], {
      LOG_LEVEL: 'info',
    });
    expect(code).toBe(0);
    expect((JSON.parse(stdout) as { statusCode: number }).statusCode).toBe(200);
    expect(stderr).toContain('"message":"request"');
  });

  it.each([
    ['null', 'null', 500],
    ['an array', '[1, 2]', 500],
    ['a number', '42', 500],
    ['an empty object', '{}', 401],
  ])('passes %s (%s) to the function as it is, and prints only its answer, a %i', (_, json, status) => {
    const { code, stdout, stderr } = invoke(['projects', '--event', writeJson(`event-${json.length}.json`, json)]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    // Not an event the function can serve: its own answer (the contract's 500, or a 401 for {}), as JSON alone.
    expect((JSON.parse(stdout) as { statusCode: number }).statusCode).toBe(status);
  });

  it('refuses an event file that is not JSON (exit 2), without echoing its content', () => {
    const file = writeJson(
      'not-json.json',
      '{"headers": {"authorization": "Bearer tra_secret_in_a_broken_file"} oops}',
    );
    const { code, stdout, stderr } = invoke(['projects', '--event', file]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain(`--event ${file} is not JSON: line 1 column`);
    expect(stderr).not.toContain('tra_secret_in_a_broken_file');
    const garbage = invoke(['projects', '--event', writeJson('garbage.json', 'tra_secret_garbage')]);
    expect(garbage.code).toBe(2);
    expect(garbage.stderr).not.toContain('tra_secret_garbage');
  });

  it('refuses a missing event file (exit 2)', () => {
    const { code, stderr } = invoke(['projects', '--event', join(dir, 'no-such-event.json')]);
    expect(code).toBe(2);
    expect(stderr).toContain('--event: cannot read');
  });
});

describe('npm start', () => {
  /** Starts commands/start.ts and resolves once it printed its banner. */
  async function start(args: string[], env: Record<string, string | undefined> = {}) {
    const child = spawn(process.execPath, [join(ROOT, 'commands/start.ts'), ...args], {
      // Java on its quick compiler alone: half the CPU of DynamoDB Local's start.
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE,
        JAVA_TOOL_OPTIONS: '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        if (out.includes('Ctrl-C (or SIGTERM, SIGHUP) stops the API')) {
          clearInterval(timer);
          resolve();
        }
        if (child.exitCode !== null) {
          clearInterval(timer);
          reject(new Error(`start exited: ${out}`));
        }
      }, 100);
    });
    return { child, output: () => out, exited };
  }

  it('starts DynamoDB Local, imports the demo data, and prints a working token and curl line', async () => {
    const port = await freePort();
    const { child, output, exited } = await start(['--port', String(port)]);
    const text = output();
    const secret = /demo token[^\n]*\n\s+(tra_\S+)/.exec(text)?.[1];
    // The URL quoted, so that a shell (zsh) does not take its ? for a glob.
    const url = /curl -s -H "Authorization: Bearer \S+" '(\S+)'\n/.exec(text)?.[1];
    expect(text).toContain('Ctrl-C (or SIGTERM, SIGHUP) stops the API and DynamoDB Local.');
    expect(secret).toBeDefined();
    expect(url).toBe(`http://127.0.0.1:${port}/api/acme/projects?per_page=5`);
    const res = await fetch(url!, { headers: { Authorization: `Bearer ${secret}` } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { results: number }).results).toBe(5);
    // Stopping, and what is left after it, is command-signals.test.ts's subject.
    child.kill('SIGINT');
    expect(await exited).toBe(0);
  }, 90_000);

  it('serves another port and another snapshot into an already running endpoint, stopping on SIGTERM', async () => {
    const port = await freePort();
    const file = writeJson(
      'start.json',
      snapshot({ teams: [team(7, 'seven')], users: [user(70, [7])], projects: projects(7, 3) }),
    );
    const tableName = `start-${port}`;
    const { child, output, exited } = await start(['--port', String(port), '--data', file], {
      DYNAMODB_ENDPOINT: table.endpoint,
      TABLE_NAME: tableName,
    });
    const secret = /demo token[^\n]*\n\s+(tra_\S+)/.exec(output())?.[1];
    // It started no DynamoDB Local, and says it stops only what it did start.
    expect(output()).toContain(
      'Ctrl-C (or SIGTERM, SIGHUP) stops the API; DynamoDB at DYNAMODB_ENDPOINT keeps running, with the table and data.',
    );
    expect(output()).not.toContain('DynamoDB Local');
    const res = await fetch(`http://127.0.0.1:${port}/api/seven/projects`, {
      headers: { Authorization: `Bearer ${secret}` },
    });
    expect(((await res.json()) as { meta: { total: number } }).meta.total).toBe(3);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 60_000);

  it('refuses an invalid --data snapshot before starting anything', async () => {
    const file = writeJson('bad-start.json', { teams: [{ id: 'one' }] });
    const result = run('commands/start.ts', ['--port', '0', '--data', file], {
      env: { DYNAMODB_ENDPOINT: undefined, TABLE_NAME: undefined },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('teams[0] (id "one"): id must be a positive integer');
  });

  it('says in one line that a port is in use, naming it, before starting anything (exit 1)', async () => {
    const port = await freePort();
    const busy: Server = createServer();
    await new Promise<void>((resolve) => busy.listen(port, '127.0.0.1', () => resolve()));
    try {
      const { code, stdout, stderr } = run('commands/start.ts', ['--port', String(port)], {
        env: { DYNAMODB_ENDPOINT: undefined },
      });
      expect(code).toBe(1);
      expect(stdout).toBe('');
      expect(stderr).toBe(
        `port ${port} is already in use on 127.0.0.1: stop what uses it, or choose another with --port\n`,
      );
    } finally {
      busy.close();
    }
  });

  it('refuses a --user who is not in the snapshot (exit 1) before starting anything', () => {
    const { code, stderr } = run('commands/start.ts', ['--port', '0', '--user', '999'], {
      env: { DYNAMODB_ENDPOINT: undefined },
    });
    expect(code).toBe(1);
    expect(stderr).toBe('--user 999 is not a user of the snapshot\n');
  });
});
