import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROUTE_METADATA_KEY, SERVED_ROUTES, type FunctionName } from '../../shared/routes.ts';
import type { Handlers, LambdaHandler } from './server.ts';

/**
 * The functions exactly as the stack deploys them: the bundles `cdk synth` wrote into the cloud
 * assembly (cdk.out), found through the template, loaded unchanged. `npm start -- --bundled` and
 * test/infra/bundled.test.ts serve these instead of the source modules.
 */


export interface BundledFunction {
  route: FunctionName;
  /** The function's logical id in the template. */
  logicalId: string;
  /** The asset directory: what is zipped and uploaded as the function's code. */
  assetDir: string;
  /** The module Lambda loads (`index.mjs` for `Handler: index.handler`). */
  file: string;
  /** The export Lambda calls. */
  exportName: string;
}

interface AssemblyManifest {
  artifacts?: Record<string, { type: string; properties?: { templateFile?: string; file?: string }; displayName?: string }>;
}
interface AssetManifest {
  files?: Record<string, { source: { path: string; packaging?: string } }>;
}
interface TemplateResource {
  Type: string;
  Properties?: { Handler?: string; Code?: { S3Key?: unknown } };
  Metadata?: Record<string, unknown>;
}

/**
 * Finds each route's bundle in a synthesized cloud assembly: the stack's template names the
 * function (by its route metadata) and its code's S3 key; the asset manifest maps that key to the
 * asset directory. `stackName` is needed only when the assembly holds more than one stack.
 */
export function findBundledFunctions(assemblyDir: string, stackName?: string): Record<FunctionName, BundledFunction> {
  const dir = resolve(assemblyDir);
  const manifestFile = join(dir, 'manifest.json');
  if (!existsSync(manifestFile)) throw new Error(`${dir} is not a cloud assembly (no manifest.json): run npm run synth first`);
  const manifest = readJson<AssemblyManifest>(manifestFile);
  const artifacts = Object.entries(manifest.artifacts ?? {});
  const stacks = artifacts.filter(([id, a]) => a.type === 'aws:cloudformation:stack' && (stackName === undefined || id === stackName || a.displayName === stackName));
  if (stacks.length !== 1) {
    throw new Error(stackName === undefined ? `${dir} holds ${stacks.length} stacks; name one` : `${dir} holds no stack named ${stackName}`);
  }
  const [stackId, stack] = stacks[0]!;
  const template = readJson<{ Resources?: Record<string, TemplateResource> }>(join(dir, stack.properties!.templateFile!));
  const assetFiles = artifacts
    .filter(([id, a]) => a.type === 'cdk:asset-manifest' && id === `${stackId}.assets`)
    .flatMap(([, a]) => Object.entries(readJson<AssetManifest>(join(dir, a.properties!.file!)).files ?? {}));

  const found: Partial<Record<FunctionName, BundledFunction>> = {};
  for (const [logicalId, resource] of Object.entries(template.Resources ?? {})) {
    const route = resource.Metadata?.[ROUTE_METADATA_KEY];
    if (resource.Type !== 'AWS::Lambda::Function' || typeof route !== 'string') continue;
    const s3Key = resource.Properties?.Code?.S3Key;
    const asset = typeof s3Key === 'string' ? assetFiles.find(([hash]) => s3Key === `${hash}.zip`)?.[1] : undefined;
    if (!asset) throw new Error(`function ${logicalId} (${route}) has no file asset in ${dir}`);
    const handler = resource.Properties?.Handler ?? 'index.handler';
    const dot = handler.lastIndexOf('.');
    const assetDir = join(dir, asset.source.path);
    const file = ['.mjs', '.js', '.cjs'].map((ext) => join(assetDir, handler.slice(0, dot) + ext)).find((f) => existsSync(f));
    if (!file) throw new Error(`the asset of ${logicalId} (${route}) has no module for handler ${handler}`);
    found[route as FunctionName] = { route: route as FunctionName, logicalId, assetDir, file, exportName: handler.slice(dot + 1) };
  }
  for (const route of SERVED_ROUTES) {
    if (!found[route.name]) throw new Error(`${dir} has no function for the ${route.name} route`);
  }
  return found as Record<FunctionName, BundledFunction>;
}

/**
 * Imports the bundles unchanged and returns their handlers. The bundles read TABLE_NAME
 * (and DYNAMODB_ENDPOINT, PUBLIC_BASE_URL, LOG_LEVEL) once, at import: set them first.
 */
export async function loadBundledHandlers(assemblyDir: string, stackName?: string): Promise<Handlers> {
  const functions = findBundledFunctions(assemblyDir, stackName);
  // As Lambda says of an on-demand container; Powertools reports cold starts from it.
  process.env.AWS_LAMBDA_INITIALIZATION_TYPE ??= 'on-demand';
  const load = async (name: FunctionName): Promise<LambdaHandler> => {
    const { file, exportName } = functions[name];
    const module = (await nativeImport(pathToFileURL(file).href)) as Record<string, unknown>;
    const handler = module[exportName];
    if (typeof handler !== 'function') throw new Error(`${file} exports no function ${exportName}`);
    return handler as LambdaHandler;
  };
  const handlers = {} as Handlers;
  for (const { name } of SERVED_ROUTES) handlers[name] = await load(name);
  return handlers;
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

function readJson<T>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}
