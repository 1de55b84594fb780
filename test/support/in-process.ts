import { setTimeout as sleep } from 'node:timers/promises';
import { lambdaContext } from '../../commands/local/api-gateway-event.ts';
import type { Functions, Handlers } from '../../commands/local/server.ts';

/**
 * Handlers called in this process, all requests in one module scope, for the local server
 * (commands/local/server.ts): stand-in functions, and tests that read the functions' state.
 * `npm start` runs the functions in containers (commands/local/containers.ts).
 */
export function inProcess(handlers: Handlers): Functions {
  return {
    invoke: (name, event, timeoutMs) =>
      Promise.race([
        (async () => handlers[name](event, lambdaContext(name, timeoutMs, event.requestContext.requestId)))(),
        sleep(timeoutMs, undefined, { ref: false }).then(() => Promise.reject(new Error(`${name} timed out`))),
      ]),
    close: async () => {},
  };
}
