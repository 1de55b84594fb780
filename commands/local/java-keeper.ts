import { spawn } from 'node:child_process';

/**
 * DynamoDB Local's keeper: `node java-keeper.ts <java arguments…>`, started by startDynamoDbLocal
 * with a pipe on its stdin. It starts Java and stops it when that pipe closes, which the kernel does
 * the moment the process that started the keeper ends, however it ends: even a SIGKILL, where no
 * handler of that process runs. It also stops Java on SIGINT, SIGTERM and SIGHUP (a Ctrl-C reaches
 * the whole process group), and exits when Java has. Java's output, and the keeper's, go to stderr.
 */
process.stderr.on('error', () => {}); // whoever reads it may be gone by the time there is something to say

/** Starts the line that says how Java ended when nobody asked it to stop (dynamodb-local.ts reads it). */
const ENDED = 'java-keeper: ';

const java = spawn('java', process.argv.slice(2), { stdio: ['ignore', process.stderr, 'inherit'] });
let stopping = false;

java.once('error', (error: NodeJS.ErrnoException) => {
  process.stderr.write(
    error.code === 'ENOENT'
      ? 'DynamoDB Local needs Java 17 or later on the PATH (java was not found)\n'
      : `cannot start Java: ${error.message}\n`,
  );
  process.exit(1);
});
java.once('exit', (code, signal) => {
  if (stopping) process.exit(0);
  // Not asked to stop (killed, out of memory, crashed): said on a line of its own, which
  // startDynamoDbLocal reads back as how DynamoDB Local ended.
  process.stderr.write(`${ENDED}${signal ? `Java was killed by ${signal}` : `Java exited with code ${code}`}\n`);
  process.exit(1);
});

function stop() {
  if (stopping) return;
  stopping = true;
  java.kill('SIGTERM');
  // Java normally stops within a second; never wait on it for long.
  setTimeout(() => java.kill('SIGKILL'), 3_000).unref();
}

process.stdin.on('end', stop);
process.stdin.on('close', stop);
process.stdin.on('error', stop);
process.stdin.resume();
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, stop);
