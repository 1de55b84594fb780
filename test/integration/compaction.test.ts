import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listHeadKey } from '../../shared/table/keys.ts';
import { OVERLAY_COMPACT_BYTES } from '../../shared/write/list-edits.ts';
import type { TestTable } from '../support/dynamodb.ts';
import { limitedDynamoDb, throughCommandClients } from '../support/limited-dynamodb.ts';
import { itemsOfTeam, ListModel, modelItems, spacedProjects, sweptAt, walkProjects } from '../support/list-changes.ts';
import { createSourceDatabase, type SourceDatabase, sourceServer } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { type RunningSync, servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';
import { countedOn } from '../support/writes.ts';

/**
 * Compaction beside (docs/storage.md, "Lists that change by the item, at any size"; shared/write/
 * compaction.ts): a list whose overlay has grown past its budget is written dense as a new generation
 * beside the one readers use, while the team's changes keep landing by the item; it switches once it
 * has caught up with them. Through the sync (which compacts in the background, shared/sync/batch.ts)
 * and the limiter, so that writing the list beside takes what it takes on DynamoDB: 30,000 items at
 * one key's 1,000 write units a second, at least 30 s, time for changes to land meanwhile. No hook:
 * the changes land while the compaction is seen writing its generation (the limiter's counts).
 * PostgreSQL only: the write path is the same for both engines.
 */
const live = limitedDynamoDb();
const SECRET = 'compaction-secret-0001';
const TEAM = { teamId: 1, slug: 'compacted', count: 30_000 };
const OTHER = { teamId: 2, slug: 'other' };
const slugs = new Map([TEAM, OTHER].map((t) => [t.slug, t.teamId]));
let ahead = 0;

describe.skipIf(sourceServer('postgres').state === 'missing')('a compaction (PostgreSQL)', () => {
  let db: SourceDatabase;
  let table: TestTable;
  let sync: RunningSync;
  let api: ReturnType<typeof tableApi>;
  let counted: ReturnType<typeof countedOn>;
  const model = new ListModel(spacedProjects(TEAM.teamId, TEAM.count));
  let cost = 5;

  beforeAll(async () => {
    db = await createSourceDatabase('postgres');
    await seedSource(db, {
      teams: [TEAM, OTHER].map((t) => ({ id: t.teamId, slug: t.slug, name: t.slug, user_id: 10 })),
      users: [{ id: 10, name: 'Ada', teams: [TEAM.teamId, OTHER.teamId] }],
      tokens: [{ id: 70, user_id: 10, token: SECRET, abilities: ['*'] }],
      projects: spacedProjects(TEAM.teamId, TEAM.count),
      costs: [{ team_id: OTHER.teamId, label: 'Backups', amount: '5.00', currency: 'EUR' }],
    });
    await setUp(db);
    table = throughCommandClients(await live.table(), live.endpoint);
    counted = countedOn(table);
    api = tableApi(table);
    sync = startSync(db, table, { clock: () => Date.now() + ahead });
    await servedWithin(
      () => serves(model.ids.at(-1)!),
      300_000,
      () => sync.lines.join('\n'),
    );
  }, 600_000);
  afterAll(async () => {
    await sync?.stop();
    await db?.drop();
  });

  const head = async () =>
    (
      await table.doc.send(
        new GetCommand({ TableName: table.tableName, Key: listHeadKey(TEAM.teamId, 'projects'), ConsistentRead: true }),
      )
    ).Item!;
  const serves = async (id: number) => {
    const page = model.pageOf(id, 50);
    const answer = await api.get(`/api/${TEAM.slug}/projects?per_page=50&page=${page}`, { token: SECRET });
    if (answer.status !== 200 || answer.body.meta.total !== model.ids.length) return false;
    const got = answer.body.data.map((p: { id: number; name: string }) => ({ id: p.id, name: p.name }));
    return JSON.stringify(got) === JSON.stringify(model.page(page, 50));
  };
  /** Write units taken by generations of the team's projects other than `generation`. */
  const besideWrites = (generation: string) =>
    Object.entries(live.stats().tables[table.tableName]?.partitions ?? {})
      .filter(([key]) => key.startsWith(`TEAM#${TEAM.teamId}#G`) && key.endsWith('#projects'))
      .filter(([key]) => !key.includes(`#G${generation}#`))
      .reduce((n, [, usage]) => n + usage.writeUnits, 0);
  const sourceChange = async (sql: string, id: number, limitMs = 10_000) => {
    await db.query(sql);
    return servedWithin(
      () => serves(id),
      limitMs,
      () => sync.lines.join('\n'),
    );
  };
  /** The writers' clock past retention, and a change of the other team: its write sweeps. */
  const sweep = async () => {
    ahead += 7 * 60_000;
    cost += 1;
    const batch = sync.nextBatch();
    await db.query(`UPDATE costs SET amount = ${cost} WHERE team_id = ${OTHER.teamId}`);
    await batch;
  };

  it('writes the list dense beside once its overlay passed its budget, takes in the changes made meanwhile, and serves the same pages', async () => {
    const { generation: before } = await head();
    const count = counted.restart();
    // Every 15th project renamed in one transaction: 2,000 versions, each a changed slot in the overlay.
    const renamed = model.ids.filter((_, i) => i % 15 === 7);
    for (const id of renamed) model.set(id, `Renamed ${id}`);
    await sourceChange(
      `UPDATE projects SET name = 'Renamed ' || id WHERE id IN (${renamed.join(',')})`,
      renamed.at(-1)!,
      // 2,000 items written at one key's 1,000 units a second, and as many found by the item first.
      60_000,
    );
    const grown = await head();
    expect(grown.generation).toBe(before);
    expect((grown.overlay as Uint8Array).length).toBeGreaterThan(OVERLAY_COMPACT_BYTES);
    // The compaction writes the new generation beside.
    await servedWithin(
      async () => besideWrites(before) > 0,
      30_000,
      () => 'no compaction started',
    );
    const walkedBefore = await walkProjects(api, TEAM.slug, SECRET);
    expect(walkedBefore.items).toEqual(modelItems(model));
    expect(walkedBefore.totals).toEqual([model.ids.length]);

    // Changes while it is written beside: each served within 10 s, on the generation readers use.
    const landed: string[] = [];
    const during = async (what: string, sql: string, id: number) => {
      const beside = besideWrites(before);
      const ms = await sourceChange(sql, id);
      landed.push(`${what} in ${Math.round(ms)} ms, the new generation at ${beside} of ${TEAM.count} items`);
      expect((await head()).generation, `${what}: the compaction had already switched`).toBe(before);
    };
    const middle = () => model.ids[Math.floor(model.ids.length / 2)]!;
    const renamedNow = middle();
    model.set(renamedNow, 'Renamed meanwhile');
    await during('renamed', `UPDATE projects SET name = 'Renamed meanwhile' WHERE id = ${renamedNow}`, renamedNow);
    const added = middle() + 1;
    model.set(added, 'Added meanwhile');
    await during(
      'added',
      `INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) ` +
        `VALUES (${added}, ${TEAM.teamId}, 'Added meanwhile', 'added', now(), now())`,
      added,
    );
    const removed = model.ids[100]!;
    model.remove(removed);
    await during('removed', `DELETE FROM projects WHERE id = ${removed}`, removed);

    // The switch, once the generation beside is whole and has caught up.
    await servedWithin(
      async () => (await head()).generation !== before,
      180_000,
      () => sync.lines.join('\n'),
    );
    const compacted = await head();
    expect(Number(compacted.count)).toBe(model.ids.length);
    expect((compacted.overlay as Uint8Array | undefined)?.length ?? 0).toBeLessThan(20);
    const walkedAfter = await walkProjects(api, TEAM.slug, SECRET);
    expect(walkedAfter.items).toEqual(modelItems(model));
    expect(walkedAfter.totals).toEqual([model.ids.length]);

    // Past retention, a write sweeps the old generation: 30,000 deletes, at least 30 s at one key's
    // 1,000 units a second. The team's changes are still served within 10 s meanwhile.
    const oldGeneration = () =>
      itemsOfTeam(count, TEAM.teamId, slugs).filter((key) => key.startsWith(`TEAM#${TEAM.teamId}#G${before}#`)).length;
    const writtenBeforeSweep = oldGeneration();
    const swept = sweep();
    await servedWithin(
      async () => oldGeneration() > writtenBeforeSweep,
      60_000,
      () => 'no sweep started',
    );
    const renamedLate = model.ids[500]!;
    model.set(renamedLate, 'Renamed while swept');
    const late = await sourceChange(
      `UPDATE projects SET name = 'Renamed while swept' WHERE id = ${renamedLate}`,
      renamedLate,
    );
    const deletedThen = oldGeneration() - writtenBeforeSweep;
    landed.push(`renamed while the old generation was swept (${deletedThen} deleted then) in ${Math.round(late)} ms`);
    expect(deletedThen).toBeLessThan(TEAM.count);
    // What it cost, its sweep included, counted toward the 2,000 changes that grew the overlay.
    await swept;
    await sweptAt(table, Date.now() + ahead);
    expect(oldGeneration()).toBeGreaterThanOrEqual(TEAM.count + renamed.length);
    const items = itemsOfTeam(count, TEAM.teamId, slugs).length;
    console.info(
      `compaction of ${TEAM.count} items: ${landed.join('; ')}; ` +
        `${items} items for the ${renamed.length} renames, the compaction and their sweeps: ${(items / renamed.length).toFixed(1)} a change`,
    );
  }, 600_000);
});
