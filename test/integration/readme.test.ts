import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE, ROOT } from '../support/import-process.ts';
import { startCommand, type CommandProcess } from '../support/processes.ts';

/**
 * The README's examples, run as a reader pastes them, against `npm start`. Every
 * ```sh block runs in bash (`set -euo pipefail`) with the variables of the export line npm start
 * printed (API, TOKEN, DYNAMODB_ENDPOINT, TABLE_NAME, AWS_REGION) and the project's Node 24 first on
 * the PATH; every ```ts block is type-checked under `strict` and run with the same variables. A
 * block marked `no-run` after its language (```sh no-run: npm install, deploying) is left alone;
 * other languages (json, text, none) are output, not run.
 */
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const BLOCKS = [...README.matchAll(/^```(sh|ts)([^\n]*)\n([\s\S]*?)^```$/gm)]
  .filter(([, , info]) => !/\bno-run\b/.test(info!))
  .map(([, language, , code], i) => ({
    name: `${language} block ${i + 1}: ${code!.split('\n')[0]}`,
    language: language!,
    code: code!,
  }));

let start: CommandProcess;
let env: Record<string, string | undefined>;
beforeAll(async () => {
  const path = `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH}`;
  start = startCommand(NODE, ['commands/start.ts', '--port', '0'], {
    cwd: ROOT,
    env: {
      PATH: path,
      HOME: process.env.HOME,
      NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE,
      JAVA_TOOL_OPTIONS: '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC',
    },
  });
  const banner = await start.waitFor('stops the API and DynamoDB Local');
  const line = /^ {2}export (.+)$/m.exec(banner)![1]!;
  env = {
    PATH: path,
    HOME: process.env.HOME,
    NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE,
    ...Object.fromEntries(line.split(' ').map((word) => word.split(/=(.*)/s).slice(0, 2))),
  };
}, 180_000);
afterAll(async () => {
  start?.child.kill('SIGTERM');
  await start?.exited;
});

describe('README.md examples', () => {
  it('has examples to run', () => {
    expect(BLOCKS.length).toBeGreaterThan(0);
  });

  it.each(BLOCKS.filter((b) => b.language === 'sh'))('$name', ({ code }) => {
    const result = spawnSync('bash', ['-c', `set -euo pipefail\n${code}`], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.status, `${result.stdout}\n${result.stderr}`).toBe(0);
  });

  it.each(BLOCKS.filter((b) => b.language === 'ts'))(
    '$name',
    ({ code }) => {
      // As if saved at the project's root, where the README says to run it: a folder one level down,
      // its relative imports one level up.
      const dir = mkdtempSync(join(ROOT, '.readme-'));
      try {
        writeFileSync(join(dir, 'block.ts'), code.replaceAll("from './", "from '../"));
        writeFileSync(
          join(dir, 'tsconfig.json'),
          JSON.stringify({
            extends: '../tsconfig.json',
            compilerOptions: { strict: true, noEmit: true },
            include: ['block.ts'],
          }),
        );
        const checked = spawnSync(NODE, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], {
          cwd: ROOT,
          encoding: 'utf8',
        });
        expect(checked.status, checked.stdout).toBe(0);
        const ran = spawnSync(NODE, [join(dir, 'block.ts')], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
        expect(ran.status, ran.stderr).toBe(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    120_000,
  );
});
