import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type DynamoDbLimiter, startDynamoDbLimiter } from '../commands/local/dynamodb-limiter.ts';
import { LIST_RESOURCES, listHeadKey, teamRecordKey } from '../shared/table/keys.ts';
import { decodeOverlay } from '../shared/table/list-layout.ts';
import { SWEEP_AFTER_MS, sweepReplaced } from '../shared/write/ledger.ts';
import { freshTable, importDocument, type TestTable } from '../test/support/dynamodb.ts';
import { setUp, startSync } from '../test/support/sync.ts';
import { countedTable, type WriteCount } from '../test/support/writes.ts';
import { ADD_MEMBER, ADD_PROJECT, editing, outsider, outsiderToken, TEAM, teamApi, withOutsiders } from './one-team.ts';
import {
  benchTeams,
  type PartContext,
  projectId,
  secretOf,
  servedAfter,
  tokenId,
  userId,
  withDatabase,
} from './sources.ts';
import type { SourceDatabase } from '../test/support/source-databases.ts';
import type { SourceSnapshot } from '../test/support/source-seed.ts';

/**
 * What a change writes (docs/performance.md): the items and write units one change costs the sync,
 * counted at its client, against the whole-list rewrite, at 2,000, 20,000 and 100,000 projects.
 */
interface WriteRow {
  size: number;
  change: string;
  /** Changes the row's figures are the sum of. */
  changes: number;
  ours: WriteCount;
  oursUnits: number;
  baseline: WriteCount;
  baselineUnits: number;
  /** The contract's bound on the items, where it gives one. */
  goal?: number;
}

export interface WriteCosts {
  rows: WriteRow[];
  /** Per size: the bytes of the projects' overlay after these changes, and its entries. */
  overlays: { size: number; bytes: number; entries: number }[];
}

/**
 * Items and write units one change costs the sync (PostgreSQL; in this process, counted at its
 * client: its lock and the ledger included, and the sweep that removes what it replaced, run at once
 * with the clock moved past the 5 minutes), against the whole-list rewrite: the same change imported
 * into a table whose team has lost its fingerprints and its lists' heads, so that each part is written
 * whole (and the replaced one swept). Write units are the limiter's, which costs each request as
 * DynamoDB does, with no limit applied.
 */
export async function measureWrites(ctx: PartContext): Promise<WriteCosts> {
  const sizes = ctx.quick ? [500] : [2_000, 20_000, 100_000];
  const unlimited = 1e12;
  const limiter = await startDynamoDbLimiter({
    target: ctx.endpoint,
    writeUnitsPerPartitionKey: unlimited,
    readUnitsPerPartitionKey: unlimited,
    tableWriteUnits: unlimited,
    tableReadUnits: unlimited,
  });
  const result: WriteCosts = { rows: [], overlays: [] };
  try {
    for (const size of sizes) {
      const data = withOutsiders(benchTeams({ teams: 1, projects: size, daemons: 300, members: 3 }), 1);
      await withDatabase('postgres', data, async (db) => {
        result.rows.push(...(await writesAt(size, data, db, ctx, limiter, result)));
      });
    }
    return result;
  } finally {
    await limiter.stop();
  }
}

async function writesAt(
  size: number,
  data: SourceSnapshot,
  db: SourceDatabase,
  ctx: PartContext,
  limiter: DynamoDbLimiter,
  result: WriteCosts,
): Promise<WriteRow[]> {
  const [ours, base] = [
    countedTable(await freshTable(limiter.endpoint)),
    countedTable(await freshTable(limiter.endpoint)),
  ];
  await setUp(db);
  ctx.say(`a team of ${size.toLocaleString('en')} projects: the sync's first full pass, and the import...`);
  // Write units of a table, the sync's lease left out (at most one write every 15 s, whatever changes).
  const units = ({ tableName }: TestTable) => {
    const stats = limiter.stats().tables[tableName];
    return (stats?.writeUnits ?? 0) - (stats?.partitions.SYNC?.writeUnits ?? 0);
  };
  const sweep = (table: TestTable) => sweepReplaced(table, Date.now() + SWEEP_AFTER_MS + 1_000);
  const sync = startSync(db, ours.table);
  // The baseline is imported once the sync has stopped: an import of 100,000 projects in this process
  // would hold up the sync's replication stream (its keepalives) and its lease while it measures.
  const snapshots: { initial: SourceSnapshot; after: SourceSnapshot[] } = { initial: structuredClone(data), after: [] };
  const rows: WriteRow[] = [];
  try {
    await sync.readyNow;
    const { get, total, nameAt } = teamApi(ours.table);
    await servedAfter(performance.now(), async () => (await total()) === size, 1_800);
    await quiet(ours.restart());
    const edit = editing(data);
    const middle = Math.floor(size / 2);
    const revoked = tokenId(userId(TEAM, 1));
    /** A kind of change: its statement, the same change to the snapshot, its answer; `times` over (j from 0). */
    type Kind = [
      change: string,
      goal: number | undefined,
      statement: (j: number) => [string, unknown[]],
      edited: (j: number) => void,
      served?: (j: number) => Promise<boolean>,
      times?: number,
    ];
    const kinds: Kind[] = [
      [
        "nothing (Sanctum's last_used_at)",
        undefined,
        () => ['update personal_access_tokens set last_used_at = CURRENT_TIMESTAMP where id = $1', [revoked]],
        () => {},
      ],
      [
        'one project renamed',
        10,
        () => ['UPDATE projects SET name = $1 WHERE id = $2', ['Renamed', projectId(TEAM, middle)]],
        () => edit.rename(projectId(TEAM, middle), 'Renamed'),
        async () => (await nameAt(middle + 1)) === 'Renamed',
      ],
      [
        'one added after the last',
        10,
        () => [ADD_PROJECT, [projectId(TEAM, size), TEAM, 'Last']],
        () => edit.add(projectId(TEAM, size), 'Last'),
        async () => (await total()) === size + 1,
      ],
      [
        'one removed from the middle',
        50,
        () => ['DELETE FROM projects WHERE id = $1', [projectId(TEAM, middle + 1)]],
        () => edit.remove(projectId(TEAM, middle + 1)),
        async () => (await total()) === size,
      ],
      [
        'one added in the middle',
        50,
        () => [ADD_PROJECT, [projectId(TEAM, middle + 2) + 1, TEAM, 'Middle']],
        () => edit.add(projectId(TEAM, middle + 2) + 1, 'Middle'),
        async () => (await total()) === size + 1,
      ],
      [
        '20 removed from the middle, one by one (all 20)',
        1_000,
        (j) => ['DELETE FROM projects WHERE id = $1', [projectId(TEAM, middle + 3 + j)]],
        (j) => edit.remove(projectId(TEAM, middle + 3 + j)),
        async (j) => (await total()) === size - j,
        20,
      ],
      [
        'a cost line',
        undefined,
        () => ['UPDATE costs SET amount = 6 WHERE team_id = $1', [TEAM]],
        () => {
          data.costs![0]!.amount = '6.00';
        },
        async () => (await get('finances')).body.data[0].amount === 6,
      ],
      [
        'a member added',
        undefined,
        () => [ADD_MEMBER, [TEAM, outsider(0)]],
        () => void data.users!.find((u) => u.id === outsider(0))!.teams!.push(TEAM),
        async () => (await get('projects?per_page=1', outsiderToken(0))).status === 200,
      ],
      [
        'a token revoked',
        undefined,
        () => ['DELETE FROM personal_access_tokens WHERE id = $1', [revoked]],
        () =>
          void data.tokens!.splice(
            data.tokens!.findIndex((t) => t.id === revoked),
            1,
          ),
        async () => (await get('projects?per_page=1', secretOf(revoked))).status === 401,
      ],
    ];
    for (const [change, goal, statement, edited, served, times = 1] of kinds) {
      ctx.say(`${size.toLocaleString('en')} projects: ${change}...`);
      const ours_ = ours.restart();
      const oursFrom = units(ours.table);
      for (let j = 0; j < times; j++) {
        const batches = sync.batches;
        await db.query(...statement(j));
        if (served)
          await servedAfter(performance.now(), async () => sync.batches > batches && (await served(j))).catch(
            async (error) => {
              const run = await Promise.race([
                sync.done.then(
                  () => 'its run ended',
                  (failure: unknown) => `its run failed: ${(failure as Error).message}`,
                ),
                new Promise((resolve) => setTimeout(() => resolve('its run goes on'), 100)),
              ]);
              const said = sync.lines.slice(-5).join(' / ');
              const since = `${sync.batches - batches} batches since the commit`;
              throw new Error(`${change}: ${(error as Error).message}; ${since}; ${run}; the sync said: ${said}`);
            },
          );
        await quiet(ours_);
        edited(j);
      }
      await sweep(ours.table);
      snapshots.after.push(structuredClone(data));
      rows.push({
        size,
        change,
        changes: times,
        ours: ours_,
        oursUnits: units(ours.table) - oursFrom,
        baseline: ours_,
        baselineUnits: 0,
        goal,
      });
    }
    const { Item } = await ours.table.doc.send(
      new GetCommand({ TableName: ours.table.tableName, Key: listHeadKey(TEAM, 'projects') }),
    );
    const overlay = (Item?.overlay as Uint8Array | undefined) ?? new Uint8Array();
    result.overlays.push({
      size,
      bytes: overlay.length,
      entries: decodeOverlay(overlay, Number(Item?.revision)).length,
    });
  } finally {
    await sync.stop();
  }
  ctx.say(`a team of ${size.toLocaleString('en')} projects: the whole-list rewrite of each change...`);
  await importDocument(base.table, snapshots.initial);
  for (const [index, row] of rows.entries()) {
    await forgetParts(base.table);
    row.baseline = base.restart();
    const baseFrom = units(base.table);
    await importDocument(base.table, snapshots.after[index]!);
    await sweep(base.table);
    // The rewrite of the list for each of the changes (the import wrote them at once).
    row.baselineUnits = (units(base.table) - baseFrom) * row.changes;
    if (row.changes > 1) for (const [kind, n] of row.baseline.byKind) row.baseline.byKind.set(kind, n * row.changes);
  }
  return rows;
}

/**
 * The whole-list rewrite: no fingerprint on the team's record, list heads that name no item (by id,
 * what a writer reads), so that every part counts as changed and each list is written whole.
 */
async function forgetParts({ doc, tableName }: TestTable): Promise<void> {
  const update = (Key: ReturnType<typeof listHeadKey>, UpdateExpression: string, values?: object) =>
    doc.send(new UpdateCommand({ TableName: tableName, Key, UpdateExpression, ...values }));
  await update(teamRecordKey(TEAM), 'REMOVE finance_fingerprint, members_fingerprint');
  for (const list of LIST_RESOURCES)
    await update(
      listHeadKey(TEAM, list),
      'SET #count = :none, #base = :none, fingerprint = :none_text REMOVE overlay',
      {
        ExpressionAttributeNames: { '#count': 'count', '#base': 'base' },
        ExpressionAttributeValues: { ':none': 0, ':none_text': '' },
      },
    );
}

/** Resolves once nothing more has been written for 1.5 s (a batch's writes apart, its compaction). */
async function quiet(count: WriteCount): Promise<void> {
  for (let seen = -1; seen !== count.keys.length; ) {
    seen = count.keys.length;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
  }
}
