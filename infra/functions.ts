import { fileURLToPath } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import { LogLevel, OutputFormat, type BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import { FUNCTION_TIMEOUT_MS } from '../scripts/lib/local-server.ts';
import type { Route } from '../shared/routes.ts';

/** The repository root: the bundler's project root and where package-lock.json lives. */
export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The handler module of a route, exactly the file the local server loads. */
export function functionEntry(name: Route['name']): string {
  return fileURLToPath(new URL(`../functions/${name}.ts`, import.meta.url));
}

/**
 * The same time budget as the local server. A request makes at most two DynamoDB calls one after
 * the other, each at most 2 attempts of (connect 0.5 s + answer 1.5 s): 8 s in the worst case,
 * and the request deadline answers 503 half a second before the function would be killed.
 */
export const FUNCTION_TIMEOUT = Duration.seconds(FUNCTION_TIMEOUT_MS / 1000);

/**
 * 512 MB: the functions need about 70 MB, but Lambda allots CPU in proportion to memory
 * (a full vCPU at 1,769 MB), and a cold start is CPU-bound (parsing the bundle, TLS, SigV4).
 * 512 MB halves that part of a cold start compared with 256 MB for a fraction of a cent per
 * thousand requests; measured numbers are in infra/README.md.
 */
export const FUNCTION_MEMORY_MB = 512;

/**
 * How every function is bundled: one minified ES module per route with a source map, built by
 * the local esbuild (never Docker). `bundleAwsSdk` (default true) puts the AWS SDK into the bundle
 * instead of relying on the copy the nodejs24.x runtime ships: the deployed code then runs the SDK
 * version the tests ran, and the measured cold start is no slower (infra/README.md).
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
    forceDockerBundling: false,
    logLevel: LogLevel.WARNING,
  };
}
