import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/**
 * What the API's users run on openapi.json, run here on every `npm test`: Redocly CLI with its
 * recommended rules (redocly.yaml) and Spectral with `spectral:oas` (.spectral.yaml, one rule off
 * with its reason). Both are pinned devDependencies and use only their built-in rulesets, so
 * neither a new upstream rule nor the network can change the result. Each must report nothing:
 * a warning is a problem for the code generators and validating proxies that read the document.
 */
const run = promisify(execFile);
const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const bin = (name: string) => join(PROJECT_ROOT, 'node_modules', '.bin', name);
const OFFLINE_ENV = {
  ...process.env,
  // No update check, no usage data, no colours in the report.
  REDOCLY_TELEMETRY: 'off',
  REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
  NO_COLOR: '1',
  FORCE_COLOR: '0',
};

async function lint(command: string, args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(bin(command), args, { cwd: PROJECT_ROOT, env: OFFLINE_ENV, timeout: 60_000 });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof failed.code === 'number' ? failed.code : -1,
      output: `${failed.stdout ?? ''}${failed.stderr ?? ''}`,
    };
  }
}

describe('openapi.json, as API tooling lints it', () => {
  it('has no problem for Redocly CLI (recommended rules)', async () => {
    const { code, output } = await lint('redocly', [
      'lint',
      'openapi.json',
      '--config',
      'redocly.yaml',
      '--format',
      'stylish',
      '--max-problems',
      '100',
    ]);
    expect(output).not.toMatch(/\b(warning|error)\b/);
    expect(output).toContain('Your API description is valid');
    expect(code).toBe(0);
  });

  it('has no problem for Spectral (spectral:oas), not even a hint', async () => {
    const { code, output } = await lint('spectral', [
      'lint',
      'openapi.json',
      '--ruleset',
      '.spectral.yaml',
      '--fail-severity',
      'hint',
      '--format',
      'stylish',
    ]);
    expect(output.trim()).toBe("No results with a severity of 'hint' or higher found!");
    expect(code).toBe(0);
  });
});
