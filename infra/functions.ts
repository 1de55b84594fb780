import { fileURLToPath } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import { Architecture, Runtime } from 'aws-cdk-lib/aws-lambda';
import { LogLevel, OutputFormat, type BundlingOptions, type NodejsFunctionProps } from 'aws-cdk-lib/aws-lambda-nodejs';
import { FUNCTION_MEMORY_MB, FUNCTION_TIMEOUT_MS } from '../shared/function-settings.ts';
import type { FunctionName } from '../shared/routes.ts';

/** The repository root: the bundler's project root and where package-lock.json lives. */
export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The handler module of a route, exactly the file the local server loads. */
export function functionEntry(name: FunctionName): string {
  return fileURLToPath(new URL(`../functions/${name}.ts`, import.meta.url));
}

/** The time budget the local server and the handlers assume too (shared/function-settings.ts). */
const FUNCTION_TIMEOUT = Duration.seconds(FUNCTION_TIMEOUT_MS / 1000);

/** node:http loaded with require() rather than an ES import: see the module's own comment. */
const NODE_HTTP_THROUGH_REQUIRE = fileURLToPath(new URL('./bundling/node-http.ts', import.meta.url));

/**
 * How every function is bundled: one minified ES module per route with a source map, built by
 * the local esbuild (never Docker). `bundleAwsSdk` (default true) puts the AWS SDK into the bundle
 * instead of relying on the copy the nodejs24.x runtime ships: the deployed code then runs the SDK
 * version the tests ran, and the measured cold start is no slower (README.md, Deploy: "Bundle
 * sizes"). node:http comes through require(), which keeps undici out of every cold start
 * (infra/bundling/node-http.ts; docs/performance.md).
 */
export function bundlingOptions(bundleAwsSdk = true): BundlingOptions {
  return {
    format: OutputFormat.ESM,
    target: 'node24',
    mainFields: ['module', 'main'],
    minify: true,
    sourceMap: true,
    // Stack traces need the mappings only; the sources themselves would triple the map's size.
    sourcesContent: false,
    bundleAwsSDK: bundleAwsSdk,
    ...(bundleAwsSdk ? {} : { externalModules: ['@aws-sdk/*', '@smithy/*'] }),
    esbuildArgs: { '--alias:node:http': NODE_HTTP_THROUGH_REQUIRE, '--alias:http': NODE_HTTP_THROUGH_REQUIRE },
    forceDockerBundling: false,
    logLevel: LogLevel.WARNING,
  };
}

/**
 * What every function of the stack is, apart from its role, logs and environment: the entry, the
 * runtime and architecture, size, time budget and bundling. The benchmark builds its bare
 * handlers from this too, so "bundled the same way" is one definition, not two copies.
 */
export function functionBasics(entry: string, bundleAwsSdk = true): NodejsFunctionProps {
  return {
    entry,
    handler: 'handler',
    projectRoot: PROJECT_ROOT,
    depsLockFilePath: `${PROJECT_ROOT}package-lock.json`,
    runtime: Runtime.NODEJS_24_X,
    architecture: Architecture.ARM_64,
    memorySize: FUNCTION_MEMORY_MB,
    timeout: FUNCTION_TIMEOUT,
    bundling: bundlingOptions(bundleAwsSdk),
  };
}
