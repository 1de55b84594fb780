import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mappingIntoCode, syncMappingFile } from '../../infra/sync-mapping.ts';
import { UsageError } from '../../infra/usage-error.ts';
import { readDeployedConfig } from '../../shared/sync/deployed-config.ts';
import { checkedMappingFile, DEPLOYED_MAPPING_FILE } from '../../shared/sync/deployed-mapping.ts';
import { MappingError } from '../../shared/sync/mapping.ts';

/**
 * The deployed sync's mapping file (`-c syncMapping=<file>`): checked at synth as the commands check
 * `--mapping`, against both engines' default mapping; put into the function's code beside the bundle
 * (not an environment variable: Lambda's 4 KB for all of them); read at the function's cold start.
 */
const dir = mkdtempSync(join(tmpdir(), 'team-resources-mapping-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

/** A mapping that moves the projects to another table (docs/sync.md's example). */
const MOVED = {
  queries: {
    projects:
      'SELECT pid AS id, org_id AS team_id, NULL AS client_id, title AS name, handle AS slug, added_at AS created_at FROM app_projects',
  },
  watch: {
    projects: null,
    app_projects: {
      columns: ['pid', 'org_id', 'title', 'handle', 'added_at'],
      touches: [{ part: 'projects', team: 'org_id', item: 'pid' }],
    },
  },
};

describe('a mapping file checked at synth', () => {
  it('is read whole, whatever its size (here well over the 4 KB Lambda allows all environment variables)', () => {
    const big = {
      ...MOVED,
      queries: {
        ...MOVED.queries,
        costs: `SELECT id, team_id, label, amount, currency FROM costs WHERE ${'1 = 1 AND '.repeat(600)}1 = 1`,
      },
    };
    expect(JSON.stringify(big).length).toBeGreaterThan(4096);
    expect(syncMappingFile(file('big.json', JSON.stringify(big)))).toEqual(big);
  });

  it.each([
    ['no JSON', '{"queries": ', /is not usable: .*JSON/],
    [
      'a query that is no SELECT',
      '{"queries": {"projects": "DELETE FROM projects"}}',
      /is not usable: queries\.projects: must be a SELECT/,
    ],
    ['an unknown key', '{"tables": {}}', /is not usable: unknown key "tables"/],
    [
      'a touch of no part',
      '{"watch": {"t": {"columns": ["id"], "touches": [{"part": "nothing", "id": "id"}]}}}',
      /watch\.t\.touches\[0\]\.part/,
    ],
  ])('fails the synth on %s, in one line naming the file and the key', (_, text, message) => {
    const path = file('bad.json', text);
    const thrown = (() => {
      try {
        syncMappingFile(path);
      } catch (error) {
        return error as Error;
      }
    })();
    expect(thrown).toBeInstanceOf(UsageError);
    expect(thrown!.message).toMatch(new RegExp(`^syncMapping: the mapping ${path} `));
    expect(thrown!.message).toMatch(message);
    expect(thrown!.message).not.toContain('\n');
  });

  it('fails on a file that is not there, saying so', () => {
    expect(() => syncMappingFile(join(dir, 'none.json'))).toThrow(/cannot be read: there is no such file/);
  });

  it("passes docs/sync.md's example, and fails on what is no mapping at all", () => {
    // The commands' check (commands/cli/source.ts), made for each engine and team shape: at synth the
    // engine is not known yet, the secret says it at run time.
    expect(() => checkedMappingFile(file('moved.json', JSON.stringify(MOVED)))).not.toThrow();
    expect(() => checkedMappingFile(file('null.json', 'null'))).toThrow(MappingError);
  });
});

describe('the mapping in the function', () => {
  it("is copied beside the bundle after esbuild, as written at synth, by the bundling's own shell", () => {
    // A cloud assembly's directory with a quote in its path, as a user's may have.
    const assembly = join(dir, "it's cdk.out");
    const outputDir = mkdtempSync(join(dir, 'asset-'));
    const hooks = mappingIntoCode(MOVED, assembly);
    expect(existsSync(assembly)).toBe(false); // nothing written until the function is bundled
    const commands = hooks.afterBundling('/project', outputDir);
    expect(commands).toHaveLength(1);
    for (const command of commands) execFileSync('bash', ['-c', command]);
    expect(readdirSync(outputDir)).toEqual([DEPLOYED_MAPPING_FILE]);
    expect(JSON.parse(readFileSync(join(outputDir, DEPLOYED_MAPPING_FILE), 'utf8'))).toEqual(MOVED);
    // Staged in the assembly's directory, by its content: the same mapping is the same file.
    expect(readdirSync(assembly)).toEqual([expect.stringMatching(/^sync-mapping\.[0-9a-f]{16}\.json$/)]);
    mappingIntoCode(MOVED, assembly).afterBundling('/project', outputDir);
    expect(readdirSync(assembly)).toHaveLength(1);
  });

  it('is read at cold start from SOURCE_MAPPING_FILE and checked, failing the start naming it', () => {
    const env = { TABLE_NAME: 't', SOURCE_SECRET_ARN: 'arn', STACK_NAME: 'TeamResourcesApi' };
    expect(readDeployedConfig(env)).not.toHaveProperty('mapping');
    const path = file(DEPLOYED_MAPPING_FILE, JSON.stringify(MOVED));
    expect(readDeployedConfig({ ...env, SOURCE_MAPPING_FILE: path }).mapping).toEqual(MOVED);
    const bad = file('bad-at-start.json', '{"queries": {"teams": 1}}');
    expect(() => readDeployedConfig({ ...env, SOURCE_MAPPING_FILE: bad })).toThrow(
      /the mapping .*bad-at-start\.json is not usable: queries\.teams: must be a SELECT/,
    );
  });
});
