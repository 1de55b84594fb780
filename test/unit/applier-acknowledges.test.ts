import { describe, expect, it } from 'vitest';
import { Applier } from '../../shared/sync/applier.ts';
import type { BatchContext, BatchOutcome } from '../../shared/sync/batch.ts';
import type { LoggedTransaction } from '../../shared/sync/log/change-source.ts';
import { defaultMapping } from '../../shared/sync/mapping.ts';
import type { Touched } from '../../shared/sync/touches.ts';

/**
 * A position of the log is acknowledged only once every change up to it is served (contract, section
 * 9: a sync killed at any instant loses no change). The one window a real server cannot hold open on
 * demand: a change of a team that waits while the team is written apart. The batches here are a stand-in
 * whose teams written apart finish when the test says; the touches come from the real mapping.
 */
const ctx = { mapping: defaultMapping('postgres') } as BatchContext;
const renamed = (teamId: number, position: string): LoggedTransaction => ({
  changes: [
    {
      kind: 'update',
      table: 'projects',
      row: { id: String(100 + teamId), team_id: String(teamId), name: `x ${position}` },
    },
  ],
  commit: { position, committedAt: Date.now() },
});

/** `during`: awaited inside the batch that applies team 2, as a batch's reads and writes take time. */
function harness(during?: () => Promise<void>) {
  const acknowledged: string[] = [];
  const applied: number[][] = [];
  let finishApart = () => {};
  const apply = async (_: BatchContext, touched: Touched): Promise<BatchOutcome> => {
    const teams = [...touched.teams.keys()];
    applied.push(teams);
    if (teams.includes(2)) await during?.();
    // Team 1's first batch is written apart, until finishApart().
    const apart = applied.length === 1 ? new Promise<void>((resolve) => (finishApart = resolve)) : Promise.resolve();
    return { refused: 0, apartTeams: applied.length === 1 ? [1] : [], apart, compacted: Promise.resolve() };
  };
  const applier = new Applier(
    ctx,
    async (position) => void acknowledged.push(position),
    () => {},
    apply,
  );
  return { applier, acknowledged, applied, finishApart: () => finishApart() };
}

describe('the applier acknowledges a position only once every change up to it is applied', () => {
  it('holds the position of a change that waited for its team written apart until that change is applied', async () => {
    const { applier, acknowledged, applied, finishApart } = harness();
    applier.take(renamed(1, 'p1'));
    await applier.applyPending(); // team 1 written apart
    applier.take(renamed(1, 'p2')); // waits for it
    applier.take(renamed(2, 'p3'));
    await applier.applyPending();
    expect(applied).toEqual([[1], [2]]);
    finishApart();
    await applier.settled();
    // Team 1 is written and p1 served; p2's change is back in the pending work, not applied yet.
    expect(acknowledged).toEqual(['p1']);
    expect(applier.hasWork).toBe(true);
    await applier.applyPending();
    await applier.settled();
    expect(applied).toEqual([[1], [2], [1]]);
    expect(acknowledged).toEqual(['p1', 'p3']);
  });

  it('holds it too when the team written apart finishes while another batch is applied', async () => {
    let finish = () => {};
    const { applier, acknowledged, applied, finishApart } = harness(async () => finish());
    finish = finishApart;
    applier.take(renamed(1, 'p1'));
    await applier.applyPending();
    applier.take(renamed(1, 'p2'));
    applier.take(renamed(2, 'p3'));
    await applier.applyPending(); // team 1 finishes meanwhile: p2's change is back, not applied
    await applier.settled();
    expect(acknowledged).toEqual(['p1']);
    await applier.applyPending();
    await applier.settled();
    expect(applied).toEqual([[1], [2], [1]]);
    expect(acknowledged).toEqual(['p1', 'p3']);
  });

  it('acknowledges at once when nothing waits', async () => {
    const { applier, acknowledged, finishApart } = harness();
    applier.take(renamed(1, 'p1'));
    await applier.applyPending();
    finishApart();
    applier.take(renamed(2, 'p2'));
    await applier.applyPending();
    await applier.settled();
    expect(acknowledged).toEqual(['p1', 'p2']);
  });
});
