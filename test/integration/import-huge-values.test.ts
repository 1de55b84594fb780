import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NODE, ROOT } from '../support/import-process.ts';

/**
 * docs/contract.md, section 7: an import stays below 500 MB of resident memory whatever the file
 * holds, and a value longer than any field allows is said by its field's own rule. One string of
 * 600 MB (past the longest string V8 can hold) and one number of 100 MB, each in an otherwise small
 * snapshot, imported by the real command; the import reports its own peak (a preload prints
 * process.resourceUsage().maxRSS as it exits).
 */
const dir = mkdtempSync(join(tmpdir(), 'import-huge-values-'));
const children = new Set<ChildProcess>();
afterAll(() => {
  // A case that timed out leaves its import running: this file's own children, not yet reaped.
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const MB = 1 << 20;
const PEAK = `data:text/javascript,${encodeURIComponent(
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the text is the child's module source; its template literal is the child's to evaluate
  "process.on('exit', () => process.stderr.write(`PEAK ${process.resourceUsage().maxRSS}\\n`));",
)}`;

/** A file of `before`, then `megabytes` of `character`, then `after`, written a megabyte at a time. */
async function hugeFile(name: string, before: string, character: string, megabytes: number, after: string) {
  const path = join(dir, name);
  const out = createWriteStream(path);
  const block = character.repeat(MB);
  out.write(before);
  for (let i = 0; i < megabytes; i++) if (!out.write(block)) await once(out, 'drain');
  out.end(after);
  await once(out, 'close');
  return path;
}

function runImport(file: string) {
  const child = spawn(NODE, [`--import=${PEAK}`, 'commands/import.ts', file], {
    cwd: ROOT,
    // Nothing is written: the file is rejected before the database is called.
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DYNAMODB_ENDPOINT: 'http://127.0.0.1:1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise<{ code: number | null; problems: string[]; peakMb: number }>((resolve) =>
    child.once('close', (code) => {
      const peak = /^PEAK (\d+)$/m.exec(stderr);
      const problems = stderr.split('\n').filter((line) => line.startsWith('  '));
      resolve({ code, problems: problems.map((line) => line.trim()), peakMb: Number(peak?.[1]) / 1024 });
    }),
  );
}

describe('an import of a snapshot with one huge value', () => {
  it('a 600 MB name: "name must be at most 255 characters", below 500 MB of memory', async () => {
    const file = await hugeFile('name.json', '{"teams":[{"id":1,"slug":"acme","name":"', 'n', 600, '"}]}');
    const { code, problems, peakMb } = await runImport(file);
    expect(code).toBe(1);
    expect(problems).toEqual(['teams[0] (id 1): name must be at most 255 characters']);
    expect(peakMb).toBeLessThan(500);
  }, 120_000);

  it('a 100 MB id: named by its first 40 digits, below 500 MB of memory', async () => {
    const file = await hugeFile('id.json', '{"teams":[{"id":', '7', 100, ',"slug":"acme","name":"A"}]}');
    const { code, problems, peakMb } = await runImport(file);
    expect(code).toBe(1);
    expect(problems).toEqual([`teams[0] (id ${'7'.repeat(40)}…): id must be at most 9007199254740991`]);
    expect(peakMb).toBeLessThan(500);
  }, 120_000);
});
