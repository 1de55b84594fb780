import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../commands/local/dynamodb-local.ts';
import { NODE, ROOT } from '../support/import-process.ts';
import {
  processInfo,
  processTree,
  signalIfStillRunning,
  startCommand,
  waitUntilGone,
  type CommandProcess,
  type ProcessInfo,
} from '../support/processes.ts';
import { projects, snapshot, team, user } from '../support/snapshots.ts';

/**
 * docs/contract.md, section 8: `npm start` stops everything it started (the API and DynamoDB Local) on
 * Ctrl-C, SIGTERM and SIGHUP, whether the signal reaches npm or node; and when node is killed
 * outright, DynamoDB Local stops with it. Each case starts the real command, notes every process
 * it started (npm, sh, node, the keeper, Java) by pid, sends the signal, and checks each is gone.
 * Every way a stop reaches the cleanups (a signal node handles, npm's exit noticed, the process
 * group's Ctrl-C) and SIGKILL run with DynamoDB Local; the cases that only vary which process npm
 * forwards a signal to use the suite's DynamoDB instead (DYNAMODB_ENDPOINT), as Java's start is
 * most of a case's time and the same cleanup stops it.
 */
const dir = mkdtempSync(join(tmpdir(), 'command-signals-'));
const data = join(dir, 'small.json');
writeFileSync(
  data,
  JSON.stringify(snapshot({ teams: [team(1, 'acme')], users: [user(10, [1])], projects: projects(1, 3) })),
);

/**
 * Without npm's variables from the test run, and with the repository's Node first, as npm gives its
 * scripts. Java is told to start on its quick compiler alone: half the CPU of a start, seven times
 * here; what is tested, which processes run and stop, is the same.
 */
const env = {
  PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH}`,
  HOME: process.env.HOME,
  NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE,
  JAVA_TOOL_OPTIONS: '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC',
};

let running: { command: CommandProcess; tree: ProcessInfo[] } | undefined;
afterEach(async () => {
  // A failed case must not leave its processes to the next one.
  // Only processes still its own: a pid noted then may be another's by now.
  for (const p of running?.tree ?? []) signalIfStillRunning(p, 'SIGKILL');
  running = undefined;
});

/**
 * `npm start` or `node commands/start.ts` on a free port, up and serving, with every process it
 * started: DynamoDB Local too, unless `dynamo` is 'endpoint' (the suite's, through DYNAMODB_ENDPOINT).
 */
async function start(via: 'npm' | 'node', dynamo: 'local' | 'endpoint' = 'local') {
  const port = await freePort();
  const args = ['--port', String(port), '--data', data];
  const runEnv =
    dynamo === 'local' ? env : { ...env, DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'), TABLE_NAME: `signals-${port}` };
  const command =
    via === 'npm'
      ? startCommand('npm', ['start', '--', ...args], { cwd: ROOT, env: runEnv, ownGroup: true })
      : startCommand(NODE, ['commands/start.ts', ...args], { cwd: ROOT, env: runEnv });
  await command.waitFor('Ctrl-C (or SIGTERM, SIGHUP) stops the API');
  const tree = processTree(command.child.pid!);
  running = { command, tree };
  const node = tree.find(
    (p) => p.command.includes('commands/start.ts') && !p.command.startsWith('sh ') && !p.command.startsWith('npm'),
  );
  expect(node, JSON.stringify(tree)).toBeDefined();
  // What the command started: the keeper and, under it, Java running DynamoDB Local (or neither).
  expect(
    tree.some((p) => p.command.includes('java-keeper.ts')),
    JSON.stringify(tree),
  ).toBe(dynamo === 'local');
  expect(
    tree.some((p) => p.command.startsWith('java ') && p.command.includes('DynamoDBLocal.jar')),
    JSON.stringify(tree),
  ).toBe(dynamo === 'local');
  if (via === 'npm') expect(tree.length, JSON.stringify(tree)).toBeGreaterThanOrEqual(dynamo === 'local' ? 4 : 2);
  return { command, tree, node: node!, url: `http://127.0.0.1:${port}` };
}

async function expectAllGone(tree: ProcessInfo[], url: string) {
  const left = await waitUntilGone(tree, 30_000);
  expect(left.map((p) => `${p.pid} ${p.command}`)).toEqual([]);
  await expect(fetch(url)).rejects.toThrow();
}

describe('npm start stops everything it started', () => {
  // npm forwards SIGINT and SIGTERM to node (its script execs node), so these also test node's own
  // handling of each; SIGHUP kills npm alone, and node must notice its parent is gone.
  it.each([
    ['SIGINT', 'endpoint'],
    ['SIGTERM', 'endpoint'],
    ['SIGHUP', 'local'],
  ] as const)(
    'on %s sent to npm (DynamoDB: %s)',
    async (signal, dynamo) => {
      const { command, tree, url } = await start('npm', dynamo);
      process.kill(command.child.pid!, signal);
      await command.exited;
      await expectAllGone(tree, url);
    },
    120_000,
  );

  it('on SIGHUP sent to the node process npm started', async () => {
    const { tree, node, url } = await start('npm', 'endpoint');
    expect(signalIfStillRunning(node, 'SIGHUP')).toBe(true);
    await expectAllGone(tree, url);
  }, 120_000);

  it('on SIGTERM sent to node run without npm, exiting 0', async () => {
    const { command, tree, node, url } = await start('node');
    expect(signalIfStillRunning(node, 'SIGTERM')).toBe(true);
    expect((await command.exited).code).toBe(0);
    await expectAllGone(tree, url);
  }, 120_000);

  it('on Ctrl-C (SIGINT to the whole process group, as a terminal sends it), exiting 0', async () => {
    const { command, tree, url } = await start('npm');
    process.kill(-command.child.pid!, 'SIGINT');
    expect((await command.exited).code).toBe(0);
    await expectAllGone(tree, url);
  }, 120_000);

  it('stops DynamoDB Local by itself when node is killed outright (SIGKILL)', async () => {
    const { command, tree, node, url } = await start('node');
    expect(signalIfStillRunning(node, 'SIGKILL')).toBe(true);
    expect((await command.exited).signal).toBe('SIGKILL');
    await expectAllGone(tree, url);
  }, 120_000);
});

/** The Java process running DynamoDB Local under this command's keeper, as it runs now (or undefined). */
function javaOf(tree: ProcessInfo[]): ProcessInfo | undefined {
  return tree.find((p) => p.command.startsWith('java ') && p.command.includes('DynamoDBLocal.jar'));
}

describe('npm start says in one line that DynamoDB Local stopped, and stops', () => {
  it('when its Java is killed while serving: one line naming the signal, exit 1, nothing left', async () => {
    const { command, tree, url } = await start('node');
    const served = command.output().length;
    expect(signalIfStillRunning(javaOf(tree)!, 'SIGKILL')).toBe(true);
    expect((await command.exited).code).toBe(1);
    expect(command.output().slice(served)).toBe(
      'DynamoDB Local stopped (Java was killed by SIGKILL); its data was in memory: stopping\n',
    );
    await expectAllGone(tree, url);
  }, 120_000);

  it('when its Java is killed while starting: the start fails naming the signal, not a line of its banner', async () => {
    const port = await freePort();
    const command = startCommand(NODE, ['commands/start.ts', '--port', String(port), '--data', data], {
      cwd: ROOT,
      env,
    });
    await command.waitFor('starting DynamoDB Local');
    let java: ProcessInfo | undefined = javaOf(processTree(command.child.pid!));
    while (!java) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      java = javaOf(processTree(command.child.pid!));
    }
    running = { command, tree: processTree(command.child.pid!) };
    expect(signalIfStillRunning(java, 'SIGKILL')).toBe(true);
    expect((await command.exited).code).toBe(1);
    const said = command.output().split('starting DynamoDB Local (in memory)...\n')[1];
    // Killed before it answered, or once it had and the import was under way: either way, one line.
    expect(said).toMatch(
      /^(failed: DynamoDB Local could not start: Java was killed by SIGKILL|DynamoDB Local stopped \(Java was killed by SIGKILL\); its data was in memory: stopping)\n$/,
    );
  }, 120_000);
});

describe("the cleanup signals only the processes it noted, never a pid that is another's now", () => {
  it('leaves alone a process whose pid matches but whose start time does not (a reused pid)', async () => {
    const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => sleeper.once('exit', (_, signal) => resolve(signal)));
    const noted = processInfo(sleeper.pid!)!;
    // As the pid would read once reused by another process: the same number, started at another time.
    const reused = { ...noted, startTime: String(Number(noted.startTime) - 1) };
    expect(signalIfStillRunning(reused, 'SIGKILL')).toBe(false);
    expect(processInfo(sleeper.pid!)?.startTime).toBe(noted.startTime);
    expect(signalIfStillRunning(noted, 'SIGKILL')).toBe(true);
    expect(await exited).toBe('SIGKILL');
    expect(signalIfStillRunning(noted, 'SIGKILL')).toBe(false);
  });
});
