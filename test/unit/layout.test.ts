import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The layout's one rule of direction: the functions and the stack use shared/; nothing in
 * functions/, shared/ or infra/ reaches into the command-line tools, the benchmark or the tests,
 * so what is deployed can never depend on what is not.
 */
const ROOT = resolve(import.meta.dirname, '../..');

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
}

/** Every relative module a file imports (static and dynamic), as a path from the root. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const specifiers = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"](\.{1,2}\/[^'"]+)['"]/g)].map(
    (m) => m[1]!,
  );
  return specifiers.map((specifier) => relative(ROOT, resolve(ROOT, dirname(file), specifier)));
}

const topFolder = (path: string) => path.split('/')[0];

describe('the direction of imports', () => {
  it.each([
    ['functions', ['functions', 'shared', 'openapi.json']],
    ['shared', ['shared']],
    ['infra', ['infra', 'shared', 'functions']],
  ])('%s/ imports only from %j', (folder, allowed) => {
    const wrong = sourceFiles(folder).flatMap((file) =>
      importsOf(file)
        .filter((target) => !allowed.includes(topFolder(target)!))
        .map((target) => `${file} -> ${target}`),
    );
    expect(wrong).toEqual([]);
  });
});
