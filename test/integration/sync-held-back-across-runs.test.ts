import { expect, it } from 'vitest';
import { freshTable } from '../support/dynamodb.ts';
import { describeSources } from '../support/source-databases.ts';
import type { SourceSnapshot } from '../support/source-seed.ts';
import { syncRuns } from '../support/sync-runs.ts';
import { servedWithin } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * A part kept at its last good state is followed again once the row is fixed, whichever run of the
 * sync that falls in (docs/contract.md, section 9, "Bad data and faults": a row that breaks the rules
 * "keeps the part of its team it belongs to (or the whole team) as it was … once the row is fixed, the
 * team follows"; and no change lost, a deployed invocation's deadline included). A team left out whole
 * for a bad team row takes no change of its other parts meanwhile: those must be read again with the
 * fix, even when the fix is committed after the run that kept them ended and the next one took over
 * from its position in the log (as each deployed invocation does from the one before it).
 */
const ADA = 'held-back-across-runs-ada-token';

function laravelData(): SourceSnapshot {
  return {
    teams: [{ id: 1, slug: 'acme', name: 'Acme', user_id: 10 }],
    users: [{ id: 10, name: 'Ada', teams: [1] }],
    tokens: [{ id: 70, user_id: 10, token: ADA, abilities: ['*'] }],
    projects: [{ id: 100, team_id: 1, name: 'Site', slug: 'site' }],
  };
}

describeSources('a team kept for a bad row, across runs', (engine) => {
  const runs = syncRuns(engine, laravelData);

  it('serves a project changed while its team row was bad within 10 s of the fix, when a deployed invocation took over in between', async () => {
    const table = await freshTable();
    const api = tableApi(table);
    let last: unknown;
    const names = async () => {
      last = ((await api.get('/api/acme/projects', { token: ADA })).body?.data ?? []).map(
        (p: { name: string }) => p.name,
      );
      return last;
    };
    let deadline = false;
    const first = runs.start(table, { until: () => deadline });
    await first.readyNow;
    const refused = first.nextBatch((batch) => batch.SyncRowsRefused! > 0);
    await runs.db.query('UPDATE teams SET name = $1 WHERE id = 1', ['Ac\u001bme']);
    await refused;
    // The project's change is taken while the team is kept as it was: not served, and not lost.
    const taken = first.nextBatch((batch) => batch.SyncRowsRefused! > 0 && batch.SyncChangesApplied! > 0);
    await runs.db.query('UPDATE projects SET name = $1 WHERE id = 100', ['Renamed while held']);
    await taken;
    expect(await names()).toEqual(['Site']);
    // The invocation's deadline; the next takes over from the position it carried.
    deadline = true;
    await first.done;
    runs.start(table, { changesFirst: true });
    await runs.db.query('UPDATE teams SET name = $1 WHERE id = 1', ['Acme']);
    const fixed = performance.now();
    await servedWithin(
      async () => JSON.stringify(await names()) === JSON.stringify(['Renamed while held']),
      10_000 - (performance.now() - fixed),
      () => `the API answers ${JSON.stringify(last)}; ${runs.said()}`,
    );
  }, 60_000);
});
