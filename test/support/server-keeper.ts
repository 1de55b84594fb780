import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';

/**
 * A database server's keeper, as java-keeper.ts is DynamoDB Local's: `node server-keeper.ts <JSON>`,
 * started by source-servers.ts with a pipe on its stdin. It starts the server and stops it when that
 * pipe closes, which the kernel does the moment the process that started the keeper ends, however it
 * ends (a SIGKILL included); it also stops it on SIGINT, SIGTERM and SIGHUP. Once the server has
 * exited it removes the server's temporary directory and exits. The server's output goes to stderr.
 *
 * The server runs in a process group of its own, which the keeper made: its signals go to that group
 * alone, never to the test runner's. A server that has not stopped 5 s after its signal is killed
 * (PostgreSQL's workers, which each take a group of their own, exit when they see their postmaster gone).
 */
export interface KeeperSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** The server's user (the keeper runs as root): PostgreSQL refuses root, MariaDB advises against it. */
  uid?: number;
  gid?: number;
  /** What stops the server quickly and cleanly: SIGINT for PostgreSQL (fast shutdown), SIGTERM for MariaDB. */
  stopSignal: NodeJS.Signals;
  /** Removed once the server has exited. */
  removeDir: string;
}

process.stderr.on('error', () => {}); // whoever reads it may be gone by the time there is something to say

const spec = JSON.parse(process.argv[2]!) as KeeperSpec;
const server = spawn(spec.command, spec.args, {
  env: spec.env,
  uid: spec.uid,
  gid: spec.gid,
  cwd: spec.removeDir,
  detached: true,
  stdio: ['ignore', process.stderr, process.stderr],
});
let stopping = false;

function finish(code: number) {
  rmSync(spec.removeDir, { recursive: true, force: true });
  process.exit(code);
}

server.once('error', (error) => {
  process.stderr.write(`cannot start ${spec.command}: ${error.message}\n`);
  finish(1);
});
server.once('exit', (code, signal) => finish(stopping ? 0 : (code ?? (signal ? 1 : 0))));

function signalGroup(signal: NodeJS.Signals) {
  try {
    process.kill(-server.pid!, signal);
  } catch {
    // already gone
  }
}

function stop() {
  if (stopping || server.pid === undefined) return;
  stopping = true;
  signalGroup(spec.stopSignal);
  // Both servers stop within a second on a throwaway data directory; never wait on one for long.
  setTimeout(() => signalGroup('SIGKILL'), 5_000).unref();
}

process.stdin.on('end', stop);
process.stdin.on('close', stop);
process.stdin.on('error', stop);
process.stdin.resume();
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, stop);
