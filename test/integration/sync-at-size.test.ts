import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limitedDynamoDb, throughCommandClients } from '../support/limited-dynamodb.ts';
import { itemsOfTeam, ListModel, spacedProjects, sweptAt } from '../support/list-changes.ts';
import { createSourceDatabase, type SourceDatabase, sourceServer } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { type RunningSync, servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';
import { countedOn, type WriteCount } from '../support/writes.ts';
import type { TestTable } from '../support/dynamodb.ts';

/**
 * "At any size" (docs/contract.md, section 9) through the sync, under DynamoDB's limits (the limiter,
 * docs/testing.md) and the sync's own clients (commands/cli/database.ts):
 *
 * - a first load of a team of 100,000 projects, during which another team's cost line is served
 *   within 10 s (locks by team; the long list is written apart: shared/sync/batch.ts);
 * - a project renamed, one added, one removed in that team, each served within 10 s;
 * - the items each kind of change writes, counted at the sync's clients, for lists of 2,000, 20,000
 *   and 100,000 projects: its team's items, its lock, the ledger, and the sweep of what it replaced
 *   (the sync's clock moved past retention, then another change makes it sweep).
 *
 * PostgreSQL only: what is measured is the write path (plan, apply, batch.ts), the same for both
 * engines; reading each engine's log has its own tests. The load goes through the limiter once, in
 * the first test (at least 100 s): it is what the locks-by-team case measures, and the other cases
 * share the table it leaves.
 */
const live = limitedDynamoDb();
const SECRET = 'sync-at-size-secret-01';
const PER_PAGE = 50;
const HUGE = { teamId: 1, slug: 'huge', count: 100_000 };
const SIZES = [
  { teamId: 3, slug: 'two-thousand', count: 2_000 },
  { teamId: 4, slug: 'twenty-thousand', count: 20_000 },
  HUGE,
];
const OTHER = { teamId: 2, slug: 'other' };
const slugs = new Map([...SIZES, OTHER].map((t) => [t.slug, t.teamId]));
/** The writers' clock runs this far ahead of the wall clock (moved past retention to make a sweep happen). */
let ahead = 0;

describe.skipIf(sourceServer('postgres').state === 'missing')('the sync at any size (PostgreSQL)', () => {
  let db: SourceDatabase;
  let table: TestTable;
  let counted: ReturnType<typeof countedOn>;
  let api: ReturnType<typeof tableApi>;
  let sync: RunningSync;
  const models = new Map(SIZES.map((size) => [size.teamId, new ListModel(spacedProjects(size.teamId, size.count))]));
  let cost = 5;

  beforeAll(async () => {
    db = await createSourceDatabase('postgres');
    await seedSource(db, {
      teams: [...SIZES, OTHER].map((t) => ({ id: t.teamId, slug: t.slug, name: t.slug, user_id: 10 })),
      users: [
        { id: 10, name: 'Ada', teams: [...SIZES, OTHER].map((t) => t.teamId) },
        { id: 11, name: 'Bo' },
      ],
      tokens: [
        { id: 70, user_id: 10, token: SECRET, abilities: ['*'] },
        { id: 71, user_id: 11, token: 'sync-at-size-secret-02', abilities: ['*'] },
      ],
      projects: [
        ...SIZES.flatMap((size) => spacedProjects(size.teamId, size.count)),
        { id: 9, team_id: OTHER.teamId, name: 'Theirs', slug: 'theirs', created_at: '2026-01-02T03:04:05Z' },
      ],
      costs: [{ team_id: OTHER.teamId, label: 'Backups', amount: '5.00', currency: 'EUR' }],
    });
    await setUp(db);
    table = throughCommandClients(await live.table(), live.endpoint);
    counted = countedOn(table);
    api = tableApi(table);
  }, 300_000);
  afterAll(async () => {
    await sync?.stop();
    await db?.drop();
  });

  const otherCost = async () => (await api.get(`/api/${OTHER.slug}/finances`, { token: SECRET })).body?.totals?.EUR;
  /** The page of `teamId`'s projects that holds `id` is what the model says, and so is the total. */
  const serves = async (teamId: number, id: number) => {
    const model = models.get(teamId)!;
    const page = model.pageOf(id, PER_PAGE);
    const answer = await api.get(`/api/${teamId}/projects?per_page=${PER_PAGE}&page=${page}`, { token: SECRET });
    if (answer.status !== 200 || answer.body.meta.total !== model.ids.length) return false;
    const got = answer.body.data.map((p: { id: number; name: string }) => ({ id: p.id, name: p.name }));
    return JSON.stringify(got) === JSON.stringify(model.page(page, PER_PAGE));
  };

  it('loads a team of 100,000 projects for the first time, and serves another team meanwhile within 10 s', async () => {
    const started = performance.now();
    sync = startSync(db, table, { clock: () => Date.now() + ahead });
    await servedWithin(
      async () => (await otherCost()) === 5,
      120_000,
      () => sync.lines.join('\n'),
    );
    // Under way: the huge list's generation has taken writes, and is far from whole.
    const hugeWrites = () =>
      Object.entries(live.stats().tables[table.tableName]?.partitions ?? {})
        .filter(([key]) => /^TEAM#1#G.*#projects$/.test(key))
        .reduce((n, [, usage]) => n + usage.writeUnits, 0);
    await servedWithin(
      async () => hugeWrites() > 5_000,
      120_000,
      () => sync.lines.join('\n'),
    );
    await db.query(`UPDATE costs SET amount = 6 WHERE team_id = ${OTHER.teamId}`);
    const served = await servedWithin(async () => (await otherCost()) === 6, 10_000);
    const writtenThen = hugeWrites();
    cost = 6;
    // The pass is done once every team is read and the short ones written; the long ones, written
    // apart, are loaded once the API serves their last page.
    await servedWithin(
      async () => sync.ready,
      600_000,
      () => sync.lines.join('\n'),
    );
    for (const size of SIZES) {
      const last = models.get(size.teamId)!.ids.at(-1)!;
      await servedWithin(
        () => serves(size.teamId, last),
        600_000,
        () => sync.lines.join('\n'),
      );
    }
    const loaded = (performance.now() - started) / 1000;
    console.info(
      `first load through the limiter: ${loaded.toFixed(1)} s for ${HUGE.count} projects (and 22,000 more); ` +
        `another team's cost line served in ${Math.round(served)} ms, the huge list at ${writtenThen} items then`,
    );
    expect(writtenThen).toBeLessThan(HUGE.count);
    expect(loaded).toBeGreaterThanOrEqual((HUGE.count - 1_000) / 1_000);
    expect(sync.lines).toEqual([]);
  }, 900_000);

  /**
   * Runs a change of the source and waits until the API serves it and its batch is done; then moves the
   * writers' clock past retention and has another team change, so that the sync sweeps what the change
   * replaced. Returns how long it took to be served, and the items written for it.
   */
  async function change(teamId: number, sql: string, id: number): Promise<{ ms: number; items: string[] }> {
    const count: WriteCount = counted.restart();
    const batch = sync.nextBatch();
    await db.query(sql);
    const ms = await servedWithin(
      () => serves(teamId, id),
      10_000,
      () => sync.lines.join('\n'),
    );
    await batch;
    await sweep();
    return { ms, items: itemsOfTeam(count, teamId, slugs) };
  }
  async function sweep() {
    ahead += 7 * 60_000;
    cost += 1;
    const batch = sync.nextBatch();
    await db.query(`UPDATE costs SET amount = ${cost} WHERE team_id = ${OTHER.teamId}`);
    await batch;
    await sweptAt(table, Date.now() + ahead);
  }
  const rename = (teamId: number, id: number) => {
    models.get(teamId)!.set(id, `Renamed ${id}`);
    return change(teamId, `UPDATE projects SET name = 'Renamed ${id}' WHERE id = ${id}`, id);
  };
  const add = (teamId: number, id: number) => {
    models.get(teamId)!.set(id, `Added ${id}`);
    return change(
      teamId,
      `INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) ` +
        `VALUES (${id}, ${teamId}, 'Added ${id}', 'added-${id}', now(), now())`,
      id,
    );
  };
  const remove = (teamId: number, id: number) => {
    models.get(teamId)!.remove(id);
    return change(teamId, `DELETE FROM projects WHERE id = ${id}`, id);
  };
  const middle = (teamId: number) => {
    const { ids } = models.get(teamId)!;
    return ids[Math.floor(ids.length / 2)]!;
  };
  const figures: string[] = [];
  afterAll(() => console.info(`items written per change by the sync (its sweep included):\n${figures.join('\n')}`));

  describe.each(SIZES)('in a team of $count projects', ({ teamId, count }) => {
    it('writes nothing when nothing changes', async () => {
      const written = counted.restart();
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(itemsOfTeam(written, teamId, slugs)).toEqual([]);
    });

    it('writes at most 10 items for a project renamed, and serves it within 10 s', async () => {
      const { ms, items } = await rename(teamId, middle(teamId));
      figures.push(`${count}: renamed ${items.length} in ${Math.round(ms)} ms`);
      expect(items.length, items.join('\n')).toBeLessThanOrEqual(10);
      expect(items.filter((key) => key.includes('#projects '))).toHaveLength(2); // the version, then its sweep
    });

    it('writes at most 10 items for a project added after the last, and serves it within 10 s', async () => {
      const { ms, items } = await add(teamId, models.get(teamId)!.ids.at(-1)! + 2);
      figures.push(`${count}: added after the last ${items.length} in ${Math.round(ms)} ms`);
      expect(items.length, items.join('\n')).toBeLessThanOrEqual(10);
    });

    it('writes at most 50 items for a project removed from the middle, and serves it within 10 s', async () => {
      const { ms, items } = await remove(teamId, middle(teamId));
      figures.push(`${count}: removed ${items.length} in ${Math.round(ms)} ms`);
      expect(items.length, items.join('\n')).toBeLessThanOrEqual(50);
    });

    it('writes at most 50 items for a project added in the middle, and serves it within 10 s', async () => {
      const { ms, items } = await add(teamId, middle(teamId) + 1);
      figures.push(`${count}: added in the middle ${items.length} in ${Math.round(ms)} ms`);
      expect(items.length, items.join('\n')).toBeLessThanOrEqual(50);
    });

    it('writes at most 1,000 items in all for 20 projects removed from the middle one by one', async () => {
      let total = 0;
      let slowest = 0;
      for (let i = 0; i < 20; i++) {
        const { ms, items } = await remove(teamId, middle(teamId));
        total += items.length;
        slowest = Math.max(slowest, ms);
      }
      figures.push(`${count}: 20 removed one by one ${total} in all, the slowest served in ${Math.round(slowest)} ms`);
      expect(total).toBeLessThanOrEqual(1_000);
    }, 300_000);
  });

  describe('a cost line, a member, a token: as before', () => {
    it('writes at most 10 items for a cost line', async () => {
      const written = counted.restart();
      await sweep();
      const items = itemsOfTeam(written, OTHER.teamId, slugs);
      figures.push(`cost line: ${items.length}`);
      expect(items.filter((key) => /#projects /.test(key))).toEqual([]);
      expect(items.length, items.join('\n')).toBeLessThanOrEqual(10);
    });

    it("writes at most 10 items, that user's one token among them, for a member added", async () => {
      const written = counted.restart();
      const batch = sync.nextBatch();
      await db.query(
        `INSERT INTO team_user (team_id, user_id, role, created_at, updated_at) VALUES (${OTHER.teamId}, 11, 'editor', now(), now())`,
      );
      await servedWithin(
        async () => (await api.get(`/api/${OTHER.slug}/projects`, { token: 'sync-at-size-secret-02' })).status === 200,
      );
      await batch;
      const items = written.keys.filter((key) => !key.startsWith('SYNC '));
      figures.push(`member: ${items.length}`);
      expect(items.filter((key) => key.startsWith('TOKEN#'))).toHaveLength(1);
      expect(items.length, items.join('\n')).toBeLessThanOrEqual(10);
    });

    it('writes that token, and nothing of any team, for a token changed', async () => {
      const written = counted.restart();
      const batch = sync.nextBatch();
      await db.query(`UPDATE personal_access_tokens SET abilities = '["daemons:read"]' WHERE id = 71`);
      await servedWithin(
        async () => (await api.get(`/api/${OTHER.slug}/projects`, { token: 'sync-at-size-secret-02' })).status === 403,
      );
      await batch;
      const items = written.keys.filter((key) => !key.startsWith('SYNC '));
      figures.push(`token: ${items.length}`);
      expect(items.filter((key) => key.startsWith('TOKEN#'))).toHaveLength(1);
      expect(items.filter((key) => /^(TEAM|LOCK|LEDGER)/.test(key))).toEqual([]);
    });
  });
});
