import { spawn, type ChildProcess } from 'node:child_process';
import { NODE, ROOT } from './import-process.ts';

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Stops the server and returns everything it wrote. */
  stop(): Promise<{ stdout: string; stderr: string; code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts test/support/serve-child.ts with the given environment and waits until it listens. */
export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(NODE, ['test/support/serve-child.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server process did not start: ${stderr}`)), 30_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /LISTENING (\S+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    void exited.then(({ code }) => reject(new Error(`server process exited (${code}): ${stderr}`)));
  });
  return {
    url,
    child,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      const result = await exited;
      clearTimeout(timer);
      return { stdout, stderr, ...result };
    },
  };
}
