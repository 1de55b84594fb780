import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allProjects } from '../../examples/typed-client/walk.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument } from '../support/dynamodb.ts';
import { projects, snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * The README's typed client (examples/typed-client/): its types are what openapi-typescript
 * generates from openapi.json today (`npm run typecheck` compiles the example against them), and
 * walking a list with openapi-fetch by `links.next` returns every item once, in id order.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);
let api: TestApi;

beforeAll(async () => {
  const table = await freshTable();
  await importDocument(
    table,
    snapshot({
      teams: [team(1, 'acme'), team(2, 'globex')],
      users: [user(10, [1])],
      tokens: [token(10, 'secret-all'), token(10, 'secret-finances', ['finances:read'])],
      projects: [...projects(1, 123), ...projects(2, 3)],
    }),
  );
  api = await startApi(table);
});
afterAll(() => api.close());

describe('examples/typed-client', () => {
  it('has the types openapi-typescript generates from openapi.json (npm run openapi regenerates both)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'typed-client-'));
    try {
      await run(join(ROOT, 'node_modules/.bin/openapi-typescript'), ['openapi.json', '-o', join(dir, 'api.d.ts')], {
        cwd: ROOT,
        timeout: 60_000,
      });
      expect(readFileSync(join(ROOT, 'examples/typed-client/api.d.ts'), 'utf8')).toBe(
        readFileSync(join(dir, 'api.d.ts'), 'utf8'),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('walks every project of a team once, in id order, by links.next', async () => {
    const seen: number[] = [];
    for await (const project of allProjects(api.server.url, 'secret-all', 'acme')) seen.push(project.id);
    expect(seen).toEqual(projects(1, 123).map((p) => p.id));
  });

  it('walks pages of any size the same way', async () => {
    const seen: number[] = [];
    for await (const project of allProjects(api.server.url, 'secret-all', '1', 7)) seen.push(project.id);
    expect(seen).toEqual(projects(1, 123).map((p) => p.id));
  });

  it("reports the API's error message and status", async () => {
    const walk = allProjects(api.server.url, 'secret-finances', 'acme');
    await expect(walk.next()).rejects.toThrow('403 This token does not have the projects:read ability.');
  });
});
