import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * What the README and docs/ tell a reader to run exists and runs: every `npm run <script>` (and
 * `npm start`, `npm test`) they name is a script of package.json, and every TypeScript file they,
 * or the examples, tell a reader to run with Node is run on the project's Node 24 (`npx node`, from
 * node_modules), not the system's (Node 20 cannot run TypeScript). That each command's --help is
 * what docs/commands.md shows is test/unit/command-line.test.ts.
 */
const ROOT = new URL('../..', import.meta.url).pathname;
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const DOCS = ['README.md', ...readdirSync(join(ROOT, 'docs')).map((name) => `docs/${name}`)].filter((path) =>
  path.endsWith('.md'),
);
const EXAMPLES = readdirSync(join(ROOT, 'examples'), { recursive: true, encoding: 'utf8' })
  .filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts'))
  .map((name) => `examples/${name}`);
const scripts = Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts);

/** Each `npm run <script>`, `npm start` and `npm test` a text names, by the script it runs. */
function scriptsNamed(text: string): string[] {
  const named = [...text.matchAll(/\bnpm (?:run(?: -s)? ([\w:.-]+)|(start|test)\b)/g)].map((m) => m[1] ?? m[2]!);
  return [...new Set(named)];
}

/** The sh blocks of a Markdown text: what a reader runs. */
const shBlocks = (markdown: string) => [...markdown.matchAll(/```sh[^\n]*\n([\s\S]*?)```/g)].map((m) => m[1]!);

describe('the docs name only what exists', () => {
  it.each(DOCS)('%s: every npm script it names is in package.json', (path) => {
    const missing = scriptsNamed(read(path)).filter((script) => !scripts.includes(script));
    expect(missing).toEqual([]);
  });

  it.each([
    ...DOCS.map((path) => [path, shBlocks(read(path)).join('\n')]),
    ...EXAMPLES.map((path) => [path, read(path)]),
  ])("%s: a TypeScript file is run on the project's Node 24 (npx node)", (_, text) => {
    const onSystemNode = [...text.matchAll(/(?<!npx )\bnode ([\w./-]+\.ts)\b/g)].map((m) => m[0]);
    expect(onSystemNode).toEqual([]);
  });
});

describe('the check itself', () => {
  it('finds scripts however they are named', () => {
    expect(scriptsNamed('`npm run load`, npm run -s token -- x, npm start -- --port 1, npm test')).toEqual([
      'load',
      'token',
      'start',
      'test',
    ]);
  });
});
