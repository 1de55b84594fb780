import { availableParallelism } from 'node:os';
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { Invocation } from './container.ts';
import type { Functions } from './server.ts';

/**
 * The functions as Lambda runs them behind API Gateway: each request in a container (a worker
 * thread, container.ts) that serves one request at a time, with a module scope of its own (its
 * DynamoDB client and connections, its logger, its cold start), as an execution environment has.
 * More concurrent requests get more containers, up to a bound; the rest wait for one (Lambda would
 * answer 429 past the account's concurrency; a laptop has no such account, and waits instead). A
 * function past its timeout has its container stopped, as Lambda does; the wait for a container
 * does not count. Piscina runs the pool.
 */
export async function functionContainers(options: { bundled?: string } = {}): Promise<Functions> {
  const pool = new Piscina<Invocation | Record<string, never>, Awaited<ReturnType<Functions['invoke']>>>({
    filename: new URL('./container.ts', import.meta.url).href,
    workerData: { bundled: options.bundled },
    // One warm container to start with; a burst starts more, each with its cold start.
    minThreads: 1,
    // Enough to overlap DynamoDB's round trips; past the machine's cores, more only cost memory.
    maxThreads: Math.min(8, 2 * availableParallelism()),
    concurrentTasksPerWorker: 1,
    // An idle container stays a while, as Lambda keeps one (its next request is warm).
    idleTimeout: 5 * 60_000,
    // Idle containers keep their event loop running (their sockets' timers, their log writes).
    atomics: 'async',
  });
  // The first container loads the functions now: a module that fails to load fails the start.
  await pool.run({});
  return {
    async invoke(name, event, timeoutMs) {
      const { port1: started, port2 } = new MessageChannel();
      const timeout = new AbortController();
      let timer: NodeJS.Timeout | undefined;
      started.once('message', () => (timer = setTimeout(() => timeout.abort(), timeoutMs).unref()));
      try {
        return await pool.run(
          { name, event, timeoutMs, started: port2 },
          { transferList: [port2], signal: timeout.signal },
        );
      } finally {
        clearTimeout(timer);
        started.close();
      }
    },
    close: () => pool.destroy(),
  };
}
