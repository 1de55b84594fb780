import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NODE, ROOT } from '../support/import-process.ts';
import { snapshotFile } from '../support/validate.ts';

/**
 * An import never holds a snapshot whole (docs/contract.md, section 7: below 500 MB of memory whatever
 * the file holds): after its first pass over 200,000 projects (~40 MB) only ids, sums and the small
 * collections are left. Its point is the file's size: it runs in the `at-size` project
 * (vitest.config.ts), a file alone; the import's other rules are import-safety.test.ts.
 */
describe('a snapshot is streamed, never held whole', () => {
  it('keeps no record after pass 1: only ids, sums and the small collections', async () => {
    // ~40 MB of projects in a file written as a stream; pass 1 in a child process that reports
    // what it still holds after a full garbage collection.
    const path = await snapshotFile('', { raw: true });
    const out = createWriteStream(path);
    out.write('{"teams":[{"id":1,"slug":"big","name":"Big"}],"projects":[');
    const count = 200_000;
    for (let i = 1; i <= count; i++) {
      const ok = out.write(
        `${i > 1 ? ',' : ''}{"id":${i},"team_id":1,"client_id":null,"name":"${'project name '.repeat(8)}${i}","slug":"project-${i}","created_at":"2026-01-02T05:04:05+02:00"}`,
      );
      if (!ok) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
    }
    out.end(']}');
    await new Promise<void>((resolve) => out.once('finish', () => resolve()));
    const script = `
      const { validateSnapshotFile } = await import(${JSON.stringify(`${ROOT}commands/import/validation.ts`)});
      const result = await validateSnapshotFile(${JSON.stringify(path)});
      globalThis.gc();
      const { heapUsed } = process.memoryUsage();
      process.stdout.write(JSON.stringify({ ok: result.ok, items: result.ok ? result.snapshot.items : 0, heapUsed }));`;
    const child = spawn(NODE, ['--expose-gc', '--input-type=module', '-e', script], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    await new Promise((resolve) => child.once('close', resolve));
    const report = JSON.parse(stdout) as { ok: boolean; items: number; heapUsed: number };
    expect(report).toMatchObject({ ok: true, items: count });
    // 200,000 records of ~200 bytes as objects would hold well over 60 MB of heap.
    expect(report.heapUsed).toBeLessThan(40_000_000);
  }, 60_000);
});
