import { npmRunSync } from '../../commands/sync.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { execute, type Command, type Option } from '../../commands/cli/run.ts';
import { npmRunBench } from '../../commands/bench.ts';
import { npmRunImport } from '../../commands/import.ts';
import { npmRunInvoke } from '../../commands/invoke.ts';
import { npmRunOpenapi } from '../../commands/openapi.ts';
import { npmStart } from '../../commands/start.ts';
import { npmRunToken } from '../../commands/token.ts';

/**
 * docs/contract.md, section 8, in-process: each command's command line executed as its process
 * would (commands/cli/run.ts), without the process. `--help` prints the usage and exits 0; a usage
 * error is one line naming the problem, then the usage (exit 2), never a stack trace. That the real
 * process prints and exits so is tested end to end in commands.test.ts.
 */
const ROOT = new URL('../..', import.meta.url).pathname;
const COMMANDS: Record<string, Command<Record<string, Option>>> = {
  start: npmStart,
  import: npmRunImport,
  token: npmRunToken,
  invoke: npmRunInvoke,
  openapi: npmRunOpenapi,
  bench: npmRunBench,
  sync: npmRunSync,
};
const EVENT = join(ROOT, 'events/projects.json');

afterEach(() => void vi.unstubAllEnvs());

describe('--help', () => {
  const reference = readFileSync(join(ROOT, 'docs/commands.md'), 'utf8');

  it.each(Object.entries(COMMANDS))(
    '%s: --help and -h print the usage and the exit codes, exit 0; docs/commands.md shows it',
    async (_, command) => {
      for (const flag of ['--help', '-h']) {
        const { code, stdout, message } = await execute(command, [flag]);
        expect(code).toBe(0);
        expect(message).toBeUndefined();
        expect(stdout).toMatch(/^usage: npm /);
        expect(stdout).toContain('\n  -h, --help                 print this help\n');
        expect(stdout).toContain('exit codes: 0 done, 1 failed (the message says why), 2 usage error');
        expect(reference).toContain(`\`\`\`text\n${stdout}\`\`\``);
      }
    },
  );
});

describe('the usage lines', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

  it.each(Object.entries(COMMANDS))('%s: name every option the command takes', (_, command) => {
    const usage = command.usage.join('\n');
    for (const option of Object.keys(command.options)) expect(usage).toMatch(new RegExp(`--${option}\\b`));
  });

  it.each(Object.entries(COMMANDS))("%s: are the README's, word for word", (_, command) => {
    // In a Markdown table a | is written \|.
    for (const line of command.usage) expect(readme).toContain(`\`${line.replaceAll('|', '\\|')}\``);
  });
});

describe('a usage error', () => {
  it.each([
    ['start', ['--port', '99999'], '--port must be a port number from 0 to 65535, not "99999"'],
    ['start', ['--frob'], "Unknown option '--frob'"],
    ['start', ['--port'], "Option '--port <value>' argument missing"],
    ['start', ['--port', '--data', 'x.json'], "Option '--port' argument is ambiguous"],
    ['start', ['--bundled=yes'], "Option '--bundled' does not take an argument"],
    ['start', ['--user', 'ten'], '--user must be an id (a positive integer), not "ten"'],
    ['start', ['extra'], 'unexpected argument "extra"'],
    [
      'start',
      ['--data', join(ROOT, 'no-such.json')],
      `--data: cannot read ${join(ROOT, 'no-such.json')}: no such file`,
    ],
    ['import', [], 'missing <snapshot.json>'],
    ['import', ['a.json', 'b.json'], 'unexpected argument "b.json"'],
    ['import', ['--port', '1'], "Unknown option '--port'"],
    ['import', ['a.json', 'b\u001b[2J'], 'unexpected argument "b\\x1b[2J"'],
    ['import', [join(ROOT, 'missing.json')], `the snapshot: cannot read ${join(ROOT, 'missing.json')}: no such file`],
    ['import', [join(ROOT, 'data')], `the snapshot ${join(ROOT, 'data')} is not a file`],
    ['token', [], 'name a command: create, revoke, list'],
    ['token', ['frobnicate'], 'unknown command "frobnicate" (use create, revoke, list)'],
    [
      'token',
      ['create', '--user', '50', '--abilities', '*', '--expires-in', 'soon'],
      '--expires-in must look like 90d, 12h or 30m, not "soon"',
    ],
    ['token', ['create', '--user', '50', '--abilities', 'projects:write'], 'unknown ability: projects:write'],
    ['token', ['create', '--user', '50'], 'create needs --abilities'],
    [
      'token',
      ['create', '--user', '50', '--abilities', 'projects:read,,'],
      '--abilities has an empty entry: "projects:read,," (comma-separated, e.g. projects:read,daemons:read)',
    ],
    [
      'token',
      ['create', '--user', '50', '--abilities', ',projects:read'],
      '--abilities has an empty entry: ",projects:read"',
    ],
    [
      'token',
      ['create', '--user', '50', '--abilities', 'projects:read, ,daemons:read'],
      '--abilities has an empty entry',
    ],
    ['token', ['create', '--abilities', '*'], 'create needs --user <id>'],
    ['token', ['create', '--user', 'x', '--abilities', '*'], '--user must be an id'],
    ['token', ['create', '--user', '0', '--abilities', '*'], '--user must be an id'],
    ['token', ['create', '--user', '50', '--abilities', '*', '--name', ''], '--name must not be empty'],
    [
      'token',
      ['create', '--user', '50', '--abilities', '*', '--name', 'x'.repeat(256)],
      '--name must be at most 255 characters',
    ],
    [
      'token',
      ['create', '--user', '50', '--abilities', '*', '--name', 'ci\u001b[2J'],
      '--name contains a control character: "ci\\x1b[2J"',
    ],
    [
      'token',
      ['create', '--user', '50', '--abilities', '*', '--name', 'ci\u0085'],
      '--name contains a control character: "ci\\u0085"',
    ],
    ['token', ['list', '--user', '50', '--abilities', '*'], '--abilities does not apply to list'],
    ['token', ['list', 'extra', '--user', '50'], 'unexpected argument "extra"'],
    ['token', ['revoke'], 'revoke needs a token, or --id <id>'],
    ['token', ['revoke', 'a-secret', '--id', 'a'.repeat(64)], 'revoke takes a token or --id <id>, not both'],
    ['token', ['revoke', '--id', 'xyz'], '--id must be a token id as list shows it (64 hex characters), not "xyz"'],
    ['invoke', ['servers', '--event', EVENT], 'unknown function "servers" (use finances, daemons, projects)'],
    ['invoke', ['projects'], '--event <event.json> is required'],
    ['invoke', [], 'missing <function>'],
    ['invoke', ['projects', '--event', join(ROOT, 'README.md')], `--event ${join(ROOT, 'README.md')} is not JSON`],
    ['openapi', ['--frob'], "Unknown option '--frob'"],
    ['openapi', ['extra'], 'unexpected argument "extra"'],
    ['bench', ['--frob'], "Unknown option '--frob'"],
    ['bench', ['--import-gb'], "Option '--import-gb <value>' argument missing"],
  ] as const)('%s %j: one line naming the problem, then the usage; exit 2', async (name, args, problem) => {
    const command = COMMANDS[name]!;
    const { code, stdout, message } = await execute(command, [...args]);
    expect(code).toBe(2);
    expect(stdout).toBeUndefined();
    const [first, ...rest] = message!.split('\n');
    expect(first).toMatch(new RegExp(`^${command.name}: `));
    expect(first).toContain(problem);
    // Then the usage and nothing else: no stack trace, no error class names.
    expect(rest).toEqual([
      ...command.usage.map((line, i) => `${i === 0 ? 'usage:' : '      '} ${line}`),
      `(${command.name} -- --help for more)`,
    ]);
  });

  it.each([
    ['token', ['create', '--user', '50', '--abilities', '*', '--name', 'x'.repeat(10_000)], '--name must be at most'],
    ['token', ['create', '--user', '9'.repeat(1_000_000), '--abilities', '*'], '--user must be an id'],
    ['start', ['--port', '9'.repeat(1_000_000)], '--port must be a port number'],
    ['token', ['list', '--user', '1', 'x'.repeat(10_000)], 'unexpected argument'],
  ] as const)('%s %s…: the value is echoed cut to its first 40 characters', async (name, args, problem) => {
    const first = (await execute(COMMANDS[name]!, [...args])).message!.split('\n')[0]!;
    expect(first).toContain(problem);
    expect(first).toMatch(/"(x{40}|9{40})…"$/);
  });

  // A malformed setting is a usage error, like a malformed option value, said before anything
  // starts; one line alone, as the usage lines do not show the environment.
  it.each([
    ['token', ['list', '--user', '1']],
    ['token', ['create', '--user', '1', '--abilities', '*']],
    ['import', [EVENT]],
    ['start', ['--port', '0']],
    ['invoke', ['projects', '--event', EVENT]],
  ] as const)('%s %j: a DYNAMODB_ENDPOINT that is not an http(s) URL is one line, exit 2', async (name, args) => {
    for (const endpoint of ['not-a-url', 'http://[not-an-endpoint', 'localhost:8000', 'ftp://127.0.0.1:8000']) {
      vi.stubEnv('DYNAMODB_ENDPOINT', endpoint);
      expect(await execute(COMMANDS[name]!, [...args])).toEqual({
        code: 2,
        message: `${COMMANDS[name]!.name}: DYNAMODB_ENDPOINT is not an http(s) URL: "${endpoint}" (e.g. http://127.0.0.1:8000)`,
      });
    }
  });

  it('LOG_LEVEL the functions would refuse is one line, exit 2', async () => {
    vi.stubEnv('DYNAMODB_ENDPOINT', '');
    vi.stubEnv('LOG_LEVEL', 'verbose');
    expect(await execute(npmStart, ['--port', '0'])).toEqual({
      code: 2,
      message:
        'npm start: LOG_LEVEL must be one of trace, debug, info, warn, error, critical, silent (any case), not "verbose"',
    });
  });
});
