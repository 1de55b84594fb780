import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROUTE_METADATA_KEY, SERVED_ROUTES, type FunctionName } from '../../shared/api/routes.ts';
import { loadFunctionHandlers, type Handlers, type LambdaHandler } from './server.ts';

/**
 * The functions exactly as the stack deploys them: the bundles `cdk synth` wrote into the cloud
 * assembly (cdk.out), found through the template, loaded unchanged. `npm start -- --bundled` and
 * test/infra/bundled.test.ts serve these instead of the source modules.
 */
/**
 * Each route's bundle in a synthesized cloud assembly: the stack's template names the function (by
 * its route metadata) and its code's S3 key, `<hash>.zip`, whose files CDK writes to `asset.<hash>`.
 */
export function findBundledFunctions(assemblyDir: string) {
  const dir = resolve(assemblyDir);
  const [template, ...more] = existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith('.template.json')) : [];
  if (!template || more.length)
    throw new Error(`${dir} is not the cloud assembly of one stack: run npm run synth first`);
  const { Resources } = JSON.parse(readFileSync(join(dir, template), 'utf8')) as {
    Resources: Record<
      string,
      { Properties: { Handler: string; Code: { S3Key: string } }; Metadata?: Record<string, string> }
    >;
  };
  const found = {} as Record<
    FunctionName,
    { route: FunctionName; logicalId: string; assetDir: string; file: string; exportName: string }
  >;
  for (const [logicalId, { Properties, Metadata }] of Object.entries(Resources)) {
    const route = Metadata?.[ROUTE_METADATA_KEY] as FunctionName | undefined;
    if (!route) continue;
    // The stack bundles each function as ESM: `index.handler` is index.mjs's `handler`.
    const assetDir = join(dir, `asset.${Properties.Code.S3Key.replace(/\.zip$/, '')}`);
    const [module, exportName] = Properties.Handler.split('.') as [string, string];
    const file = join(assetDir, `${module}.mjs`);
    if (!existsSync(file)) throw new Error(`function ${logicalId} (${route}) has no bundle in ${dir}`);
    found[route] = { route, logicalId, assetDir, file, exportName };
  }
  for (const route of SERVED_ROUTES)
    if (!found[route.name]) throw new Error(`${dir} has no function for the ${route.name} route`);
  return found;
}

/**
 * Imports the bundles unchanged and returns their handlers. The bundles read their configuration
 * (TABLE_NAME, DYNAMODB_ENDPOINT, PUBLIC_BASE_URL, LOG_LEVEL) once, at import: set it first.
 */
export async function loadBundledHandlers(assemblyDir: string): Promise<Handlers> {
  const functions = findBundledFunctions(assemblyDir);
  return loadFunctionHandlers(async (name) => {
    const { file, exportName } = functions[name];
    return ((await nativeImport(pathToFileURL(file).href)) as Record<string, LambdaHandler>)[exportName]!;
  });
}

/**
 * Node's own `import()`, as the Lambda runtime uses it. A test runner may rewrite `import()` in
 * this file to transform what it loads; an import made from a `data:` module is left to Node.
 */
async function nativeImport(url: string): Promise<unknown> {
  const loader = 'data:text/javascript,export default (url) => import(url)';
  const { default: load } = (await import(loader)) as { default: (url: string) => Promise<unknown> };
  return load(url);
}
