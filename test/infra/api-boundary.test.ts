import { join } from 'node:path';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { functionBasics, PROJECT_ROOT } from '../../infra/functions.ts';

/**
 * Read against write: every module the API's functions bundle, followed from each function's file
 * through the whole import graph with the deployed bundling's options (infra/functions.ts), is
 * none of the writers', the sync's, the tools', the benchmark's or the tests', and no database
 * driver: the API only reads DynamoDB. (test/unit/layout.test.ts checks each file's own imports;
 * this follows them all the way, packages included.)
 */
const API_FUNCTIONS = ['projects', 'daemons', 'finances', 'openapi'] as const;

/** Where the API must not reach, as esbuild names its inputs (paths from the project root). */
const OUTSIDE_THE_API: [string, RegExp][] = [
  ['the writers', /^shared\/write\//],
  ['the sync', /^shared\/sync\//],
  ['the command-line tools', /^commands\//],
  ['the benchmark', /^bench\//],
  ['the tests', /^test\//],
  [
    'a database driver',
    /(^|\/)node_modules\/(pg|pg-[^/]+|pgpass|mysql2|@vlasky\/zongji|zongji|@electric-sql\/pglite)\//,
  ],
];

/** Every file esbuild reads to bundle the function, as `cdk synth` bundles it. */
async function bundleInputs(name: string): Promise<string[]> {
  const entry = join(PROJECT_ROOT, 'functions', `${name}.ts`);
  const { bundling } = functionBasics(entry);
  const alias = Object.fromEntries(
    Object.entries(bundling?.esbuildArgs ?? {})
      .filter(([flag]) => flag.startsWith('--alias:'))
      .map(([flag, target]) => [flag.slice('--alias:'.length), String(target)]),
  );
  const { metafile } = await build({
    entryPoints: [entry],
    absWorkingDir: PROJECT_ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    mainFields: bundling?.mainFields,
    alias,
    metafile: true,
    write: false,
    logLevel: 'silent',
  });
  return Object.keys(metafile.inputs);
}

let inputs: Record<string, string[]>;
beforeAll(async () => {
  inputs = Object.fromEntries(await Promise.all(API_FUNCTIONS.map(async (name) => [name, await bundleInputs(name)])));
});

describe("the API functions' bundles", () => {
  it.each(API_FUNCTIONS)('%s reads its handlers from shared/api (the graph is followed)', (name) => {
    expect(inputs[name]).toContain('shared/api/http/handlers.ts');
  });

  it.each(API_FUNCTIONS)(
    '%s holds nothing of the writers, the sync, the tools, the tests, and no database driver',
    (name) => {
      const wrong = inputs[name]!.flatMap((input) =>
        OUTSIDE_THE_API.filter(([, where]) => where.test(input)).map(([what]) => `${input} (${what})`),
      );
      expect(wrong).toEqual([]);
    },
  );
});
