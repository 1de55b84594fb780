import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../commands/local/dynamodb-local.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { NODE, ROOT } from '../support/import-process.ts';
import {
  processTree,
  signalIfStillRunning,
  startCommand,
  waitUntilGone,
  type CommandProcess,
  type ProcessInfo,
} from '../support/processes.ts';
import { projects, snapshot, team, user } from '../support/snapshots.ts';

/**
 * On a terminal, the import's progress bar hides the cursor (ESC[?25l) and line wrapping
 * (ESC[?7l). A signal while it is shown must give both back (ESC[?25h, ESC[?7h), say in one line
 * what was interrupted and the state it leaves (docs/contract.md, section 7), and end with the
 * signal's conventional status (128 + its number). Each case runs the real command in a
 * pseudo-terminal (`script`), with a shell around it that prints the status as a shell sees it.
 */
const dir = mkdtempSync(join(tmpdir(), 'command-terminal-'));
/** 5.3 MB: over the 5 MB from which a bar is shown, with 40,000 projects that take a while to write. */
const big = join(dir, 'big.json');
/** About 21 MB: validating it takes long enough to be interrupted half-way. */
const huge = join(dir, 'huge.json');
writeFileSync(
  big,
  JSON.stringify(snapshot({ teams: [team(1, 'acme')], users: [user(10, [1])], projects: projects(1, 40_000) })),
);
writeFileSync(
  huge,
  JSON.stringify(snapshot({ teams: [team(1, 'acme')], users: [user(10, [1])], projects: projects(1, 160_000) })),
);

const HIDE = ['\u001b[?25l', '\u001b[?7l'];
const SHOW = ['\u001b[?25h', '\u001b[?7h'];

let table: TestTable;
/** The case's command, and every process it was seen to have started (by pid and start time). */
let running: { command: CommandProcess; noted: ProcessInfo[] } | undefined;
beforeAll(async () => {
  table = await freshTable();
});
afterEach(async () => {
  // Only processes still its own: a pid noted then may be another's by now.
  for (const p of running?.noted ?? []) signalIfStillRunning(p, 'SIGKILL');
  running = undefined;
});

/** `args` run by Node in a pseudo-terminal, then `echo EXIT=$?`. */
function inTerminal(args: string[], env: Record<string, string | undefined>) {
  const line = `${[NODE, ...args].map((a) => `'${a}'`).join(' ')}; echo EXIT=$?`;
  const command = startCommand('script', ['-q', '-c', line, '/dev/null'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE,
      TERM: 'xterm',
      JAVA_TOOL_OPTIONS: '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC',
      ...env,
    },
  });
  const noted: ProcessInfo[] = [];
  running = { command, noted };
  /** What the command runs now; nothing once its own process has ended (its pid may be another's then). */
  const tree = () => {
    const { exitCode, signalCode, pid } = command.child;
    const now = exitCode === null && signalCode === null ? processTree(pid!) : [];
    noted.push(...now);
    return now;
  };
  /** The command's own node process (not the shell that runs it). */
  const node = () => {
    const found = tree().find((p) => p.command.startsWith(`${NODE} ${args[0]}`));
    expect(found, JSON.stringify(tree())).toBeDefined();
    return found!;
  };
  return { command, tree, node };
}

/** Everything after the bar last hid the cursor gives the terminal back, then says `said` alone on a line. */
function expectTerminalGivenBack(output: string, said: string | RegExp) {
  for (const hide of HIDE) expect(output).toContain(hide);
  const after = output.slice(Math.max(...HIDE.map((hide) => output.lastIndexOf(hide))));
  for (const show of SHOW) expect(after).toContain(show);
  const lines = after.split(/\r?\n/).map((l) => l.replace(/\r/g, ''));
  expect(
    lines.some((l) => (typeof said === 'string' ? l === said : said.test(l))),
    after,
  ).toBe(true);
}

describe('an import interrupted on a terminal', () => {
  it('by SIGINT while writing: the terminal given back, what it leaves said, exit 130', async () => {
    const { command, node } = inTerminal(['commands/import.ts', big], {
      DYNAMODB_ENDPOINT: table.endpoint,
      TABLE_NAME: table.tableName,
    });
    await command.waitFor('writing items');
    expect(signalIfStillRunning(node(), 'SIGINT')).toBe(true);
    await command.exited;
    const output = command.output();
    expectTerminalGivenBack(
      output,
      `import into ${table.tableName} interrupted (SIGINT): every team is whole, as it was or as the snapshot has it; run the same import again to complete it`,
    );
    expect(output).toMatch(/EXIT=130\r?\n/);
  }, 120_000);

  it.each([
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const)(
    'by %s while validating: nothing written, said, exit %i',
    async (signal, status) => {
      const { command, node } = inTerminal(['commands/import.ts', huge], {
        DYNAMODB_ENDPOINT: table.endpoint,
        TABLE_NAME: `${table.tableName}-${signal}`,
      });
      await command.waitFor('validating');
      expect(signalIfStillRunning(node(), signal)).toBe(true);
      await command.exited;
      const output = command.output();
      expectTerminalGivenBack(
        output,
        `import interrupted (${signal}) while validating the snapshot: nothing was written to ${table.tableName}-${signal}`,
      );
      expect(output).toMatch(new RegExp(`EXIT=${status}\\r?\\n`));
    },
    120_000,
  );
});

describe('npm start interrupted while importing, before the API is ready', () => {
  it('by SIGINT: the terminal given back, DynamoDB Local stopped, exit 130 (not 0)', async () => {
    const port = await freePort();
    const { command, tree, node } = inTerminal(['commands/start.ts', '--port', String(port), '--data', big], {});
    await command.waitFor('writing items');
    const started = tree();
    expect(
      started.some((p) => p.command.startsWith('java ') && p.command.includes('DynamoDBLocal.jar')),
      JSON.stringify(started),
    ).toBe(true);
    expect(signalIfStillRunning(node(), 'SIGINT')).toBe(true);
    await command.exited;
    const output = command.output();
    expectTerminalGivenBack(output, 'SIGINT: stopped before the API was ready');
    expect(output).toMatch(/EXIT=130\r?\n/);
    expect(output).not.toContain('demo token');
    expect((await waitUntilGone(started, 30_000)).map((p) => `${p.pid} ${p.command}`)).toEqual([]);
    await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow();
  }, 120_000);

  it('by SIGTERM, importing into DYNAMODB_ENDPOINT: says what the import leaves there, exit 143', async () => {
    const port = await freePort();
    const { command, node } = inTerminal(['commands/start.ts', '--port', String(port), '--data', big], {
      DYNAMODB_ENDPOINT: table.endpoint,
      TABLE_NAME: `${table.tableName}-start`,
    });
    await command.waitFor('writing items');
    expect(signalIfStillRunning(node(), 'SIGTERM')).toBe(true);
    await command.exited;
    const output = command.output();
    expectTerminalGivenBack(
      output,
      /^SIGTERM: stopped before the API was ready; the import into DYNAMODB_ENDPOINT's table may have been interrupted: every team is whole, .*start again to complete it$/,
    );
    expect(output).toMatch(/EXIT=143\r?\n/);
  }, 120_000);
});
