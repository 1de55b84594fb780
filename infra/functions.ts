import { fileURLToPath } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import { Architecture, Runtime } from 'aws-cdk-lib/aws-lambda';
import { OutputFormat, type NodejsFunctionProps } from 'aws-cdk-lib/aws-lambda-nodejs';
import { FUNCTION_MEMORY_MB, FUNCTION_TIMEOUT_MS } from '../shared/api/function-settings.ts';

/** The repository root: the bundler's project root and where package-lock.json lives. */
export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** node:http and node:timers loaded with require() rather than an ES import: see the modules' own comments. */
const NODE_HTTP_THROUGH_REQUIRE = fileURLToPath(new URL('./bundling/node-http.ts', import.meta.url));
const NODE_TIMERS_THROUGH_REQUIRE = fileURLToPath(new URL('./bundling/node-timers.ts', import.meta.url));

/**
 * What every function of the stack is, apart from its role, logs and environment: the entry, the
 * runtime and architecture, size, time budget (shared/api/function-settings.ts), and bundling: one
 * minified ES module per route with a source map, built by the project's esbuild (CDK turns to
 * Docker only when none is installed). The AWS SDK goes into the bundle instead of relying on the
 * copy the runtime ships, so the deployed code runs the SDK version the tests ran. node:http comes
 * through require(), which keeps undici out of every cold start (infra/bundling/node-http.ts), and
 * so does node:timers, which keeps node:timers/promises out (infra/bundling/node-timers.ts).
 * package.json declares the project's modules free of side effects (`"sideEffects": false`, which
 * esbuild reads): a module whose exports a function does not use stays out of its bundle, so the
 * finances function carries no pagination code.
 * The benchmark builds its bare handlers from this too: "bundled the same way" is one definition.
 */
export function functionBasics(entry: string): NodejsFunctionProps {
  return {
    entry,
    projectRoot: PROJECT_ROOT,
    depsLockFilePath: `${PROJECT_ROOT}package-lock.json`,
    runtime: Runtime.NODEJS_24_X,
    architecture: Architecture.ARM_64,
    memorySize: FUNCTION_MEMORY_MB,
    timeout: Duration.millis(FUNCTION_TIMEOUT_MS),
    bundling: {
      format: OutputFormat.ESM,
      mainFields: ['module', 'main'],
      minify: true,
      sourceMap: true,
      // Stack traces need the mappings only; the sources themselves would triple the map's size.
      sourcesContent: false,
      bundleAwsSDK: true,
      esbuildArgs: {
        '--alias:node:http': NODE_HTTP_THROUGH_REQUIRE,
        '--alias:http': NODE_HTTP_THROUGH_REQUIRE,
        '--alias:node:timers': NODE_TIMERS_THROUGH_REQUIRE,
        '--alias:timers': NODE_TIMERS_THROUGH_REQUIRE,
      },
    },
  };
}
