import { createRequire } from 'node:module';

/**
 * `node:http` as the function bundles see it: functionBasics() (infra/functions.ts) points every
 * `import … from 'node:http'` in the bundle (the AWS SDK's HTTP handler, middy) at this module.
 *
 * Why: an ES import of a built-in builds an ES module facade over all of its exports, and one of
 * node:http's exports (WebSocket, since Node 22) is a getter that loads the whole of undici, the
 * fetch implementation, which nothing here uses, at every cold start (the benchmark measures it;
 * https://github.com/nodejs/node/issues/57649 and https://github.com/nodejs/node/issues/59686).
 * require() reads no export it is not asked for; Lambda's own runtime interface client loads
 * node:http the same way.
 *
 * Export only what the bundled code imports: esbuild stops the build ("No matching export") if a
 * dependency ever imports another name, so a missing one cannot slip through to run time.
 */
const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

export default http;
export const { Agent, STATUS_CODES, request } = http;
