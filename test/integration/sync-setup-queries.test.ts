import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { NODE, ROOT } from '../support/import-process.ts';
import { startCommand } from '../support/processes.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';

/**
 * `npm run sync -- setup` runs every query of the mapping on the source and judges its columns' kinds
 * on a sample of rows, naming the query that fails (docs/contract.md, section 9; docs/sync.md, "Setup
 * and remove"). A query written for the other engine may run and still be wrong: on
 * MariaDB, PostgreSQL's `'team-' || id` is a logical OR (1), not the text `team-1`. On both engines, a
 * query that returns a column of the wrong kind (a currency where an amount was meant) is named.
 * Both engines: what `||` means is the engine's.
 */
const dir = mkdtempSync(join(tmpdir(), 'sync-setup-queries-'));

/** A mapping file, as a user writes one. */
function mappingFile(name: string, queries: Record<string, string>): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify({ queries }));
  return path;
}

/** PostgreSQL's concatenation: slugs made from ids (Jetstream's teams have none). */
const CONCATENATED = mappingFile('concatenated.json', {
  teams: "SELECT id, 'team-' || id AS slug, name, user_id FROM teams",
});
/** A server's currency read as its monthly cost. */
const WRONG_KIND = mappingFile('wrong-kind.json', {
  servers: 'SELECT id, team_id, currency AS monthly_cost, currency FROM servers',
});

async function setup(db: SourceDatabase, mapping: string) {
  const command = startCommand(NODE, ['commands/sync.ts', 'setup', '--source', db.url, '--mapping', mapping], {
    cwd: ROOT,
    env: { ...process.env },
  });
  const { code, signal } = await command.exited;
  return { code: code ?? signal, output: command.output() };
}

describeSources('setup judges every query of the mapping', (engine) => {
  let db: SourceDatabase;

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, {
      teams: [{ id: 1, slug: 'acme', name: 'Acme', user_id: 10 }],
      users: [{ id: 10, name: 'Ada', teams: [1] }],
      servers: [{ id: 5, team_id: 1, name: 'web', monthly_cost: '12.50', currency: 'EUR' }],
    });
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  it(
    engine === 'mysql'
      ? "refuses a query that uses PostgreSQL's || (an OR here), naming it (exit 1)"
      : "takes a query that uses || (PostgreSQL's concatenation)",
    async () => {
      const run = await setup(db, CONCATENATED);
      if (engine === 'mysql') {
        expect(run.code, run.output).toBe(1);
        expect(run.output).toMatch(
          /^the source \(mysql:\/\/.*:\*\*\*@.*\) lacks the teams query returns slug as no text$/m,
        );
        expect(run.output.trim().split('\n')).toHaveLength(1);
      } else {
        expect(run.code, run.output).toBe(0);
        expect(run.output).toContain('set up the source');
      }
      expect(run.output).not.toContain(db.password);
    },
  );

  it('refuses a query that returns a column of the wrong kind, naming it (exit 1)', async () => {
    const run = await setup(db, WRONG_KIND);
    expect(run.code, run.output).toBe(1);
    expect(run.output).toMatch(
      /^the source \(.*:\*\*\*@.*\) lacks the servers query returns monthly_cost as no number$/m,
    );
    expect(run.output.trim().split('\n')).toHaveLength(1);
    expect(run.output).not.toContain(db.password);
  });
});
