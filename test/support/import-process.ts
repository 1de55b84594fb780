import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestTable } from './dynamodb.ts';

/** The repository root, and the Node 24 that runs its .ts scripts directly. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const NODE = join(ROOT, 'node_modules/.bin/node');

export interface ImportRun {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

/** `node commands/import.ts file` against a test table, as an operator runs it. */
export function runImportCli(
  table: TestTable,
  file: string,
  onStderrLine: (line: string) => void = () => {},
): ImportRun {
  const child = spawn(NODE, ['commands/import.ts', file], {
    cwd: ROOT,
    env: { ...process.env, TABLE_NAME: table.tableName, DYNAMODB_ENDPOINT: table.endpoint },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let partial = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    stderr += text;
    const lines = (partial + text).split(/\r|\n/);
    partial = lines.pop() ?? '';
    for (const line of lines) if (line.trim()) onStderrLine(line);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
    (resolve) => child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, exited };
}

/** Writes snapshot documents to a temporary folder; `cleanup` removes it. */
export async function snapshotFiles() {
  const dir = await mkdtemp(join(tmpdir(), 'robustness-'));
  let n = 0;
  return {
    async write(document: unknown): Promise<string> {
      const file = join(dir, `snapshot-${++n}.json`);
      await writeFile(file, typeof document === 'string' ? document : JSON.stringify(document));
      return file;
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}
