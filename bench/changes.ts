import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type DynamoDbLimiter, startDynamoDbLimiter } from '../commands/local/dynamodb-limiter.ts';
import { LIST_RESOURCES, listHeadKey, teamRecordKey } from '../shared/table/keys.ts';
import { decodeOverlay } from '../shared/table/list-layout.ts';
import { SWEEP_AFTER_MS, sweepReplaced } from '../shared/write/ledger.ts';
import { freshTable, importDocument, type TestTable } from '../test/support/dynamodb.ts';
import type { SourceDatabase } from '../test/support/source-databases.ts';
import type { SourceSnapshot } from '../test/support/source-seed.ts';
import { setUp, startSync } from '../test/support/sync.ts';
import { tableApi } from '../test/support/table-api.ts';
import { countedTable, type WriteCount } from '../test/support/writes.ts';
import { importSnapshot } from './data.ts';
import {
  benchTeams,
  ENGINES,
  type PartContext,
  projectId,
  secretOf,
  seededDatabase,
  servedAfter,
  slugOf,
  startServer,
  syncProcess,
  tokenId,
  type Use,
  usageBetween,
  usageByName,
  userId,
} from './sources.ts';

/**
 * What a change costs and how soon it is served (docs/performance.md): seconds from a commit to the
 * first answer that shows it, per kind of change, on both engines; the same at size, under DynamoDB's
 * limits, by the sync and by the import; and the items and write units a change costs, counted at the
 * client, against the whole-list rewrite.
 */
const readers = new Map<string, ReturnType<typeof tableApi>>();
/** The API's handlers over a table, in this process (one set per table, warm). */
const api = (table: TestTable) =>
  readers.get(table.tableName) ?? readers.set(table.tableName, tableApi(table)).get(table.tableName)!;
const TEAM = 1;
const OWNER_TOKEN = secretOf(tokenId(userId(TEAM, 0)));
const outsider = (i: number) => 9_000 + i;

type Served = (table: TestTable, i: number) => Promise<boolean>;
const ADD =
  'INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) ' +
  'VALUES ($1, $2, $3, $3, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)';

/** The same changes made to a snapshot, for the import (projects kept in id order). */
function editing(data: SourceSnapshot) {
  const projects = data.projects!;
  const at = (id: number) => {
    const index = projects.findIndex((p) => p.id >= id);
    return index < 0 ? projects.length : index;
  };
  return {
    rename: (id: number, name: string) => {
      projects[at(id)]!.name = name;
    },
    add: (id: number, name: string) =>
      void projects.splice(at(id), 0, { id, team_id: TEAM, name, slug: name, created_at: '2026-01-02T03:04:05Z' }),
    remove: (id: number) => void projects.splice(at(id), 1),
  };
}

/** A kind of change: its statement (round i), and whether an answer shows it yet. */
type Kind = [
  name: string,
  commit: (db: SourceDatabase, i: number) => Promise<unknown>,
  served: (i: number) => Promise<boolean>,
];

export interface LatencyRow {
  engine: string;
  change: string;
  seconds: number[];
}

/** Seconds from each commit to the first answer that shows it, `rounds` of each kind, on each engine. */
/** What each process used while an engine's commits were timed (seconds: CPU, and waiting for a CPU). */
export interface Usage {
  engine: string;
  seconds: number;
  use: Map<string, Use>;
}

export async function measureLatencies(ctx: PartContext): Promise<{ rows: LatencyRow[]; usage: Usage[] }> {
  const rounds = ctx.quick ? 2 : 15;
  const projects = 2_000;
  const rows: LatencyRow[] = [];
  const usage: Usage[] = [];
  for (const engine of ENGINES) {
    const server = await startServer(engine);
    const data = benchTeams({ teams: 1, projects, daemons: 300, tokens: rounds + 1 });
    data.users!.push(...Array.from({ length: rounds }, (_, i) => ({ id: outsider(i), teams: [] })));
    data.tokens!.push(
      ...Array.from({ length: rounds }, (_, i) => ({
        id: tokenId(outsider(i)),
        user_id: outsider(i),
        token: secretOf(tokenId(outsider(i))),
      })),
    );
    const db = await seededDatabase(server, data);
    let sync: Awaited<ReturnType<typeof syncProcess>> | undefined;
    try {
      const table = await freshTable(ctx.endpoint);
      await setUp(db);
      sync = await syncProcess(db, table);
      await sync.idle();
      const get = (route: string, token = OWNER_TOKEN) => api(table).get(`/api/${slugOf(TEAM)}/${route}`, { token });
      const total = async () => (await get('projects?per_page=1')).body.meta?.total;
      await servedAfter(performance.now(), async () => (await total()) === projects);
      const kinds: Kind[] = [
        [
          'a project inserted',
          (db, i) =>
            db.query(
              'INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) ' +
                "VALUES ($1, $2, 'New', 'new', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",
              [projectId(TEAM, projects - 1 + i), TEAM],
            ),
          async (i) => (await total()) === projects + i,
        ],
        [
          'a project renamed (raw UPDATE)',
          (db, i) => db.query('UPDATE projects SET name = $1 WHERE id = $2', [`Renamed ${i}`, projectId(TEAM, 999)]),
          async (i) => (await get('projects?per_page=1&page=1000')).body.data[0].name === `Renamed ${i}`,
        ],
        [
          'a project deleted',
          (db, i) => db.query('DELETE FROM projects WHERE id = $1', [projectId(TEAM, projects - 1 + i)]),
          async (i) => (await total()) === projects + rounds - i,
        ],
        [
          'a daemon changed',
          (db, i) => db.query('UPDATE daemons SET processes = $1 WHERE id = $2', [i + 1, TEAM * 10_000_000 + 1]),
          async (i) => (await get('daemons?per_page=1')).body.data[0].processes === i + 1,
        ],
        [
          'a cost line changed',
          (db, i) => db.query('UPDATE costs SET amount = $1 WHERE team_id = $2', [10 + i, TEAM]),
          async (i) => (await get('finances')).body.data[0].amount === 10 + i,
        ],
        [
          'a member added',
          (db, i) =>
            db.query(
              'INSERT INTO team_user (team_id, user_id, role, created_at, updated_at) ' +
                "VALUES ($1, $2, 'editor', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",
              [TEAM, outsider(i - 1)],
            ),
          async (i) => (await get('projects?per_page=1', secretOf(tokenId(outsider(i - 1))))).status === 200,
        ],
        [
          'a member removed',
          (db, i) => db.query('DELETE FROM team_user WHERE team_id = $1 AND user_id = $2', [TEAM, outsider(i - 1)]),
          async (i) => (await get('projects?per_page=1', secretOf(tokenId(outsider(i - 1))))).status === 404,
        ],
        [
          'a token revoked (Sanctum deletes it)',
          (db, i) => db.query('DELETE FROM personal_access_tokens WHERE id = $1', [tokenId(userId(TEAM, 0), i)]),
          async (i) => (await get('projects?per_page=1', secretOf(tokenId(userId(TEAM, 0), i)))).status === 401,
        ],
      ];
      ctx.say(`${server.version}: ${rounds} commits of each kind...`);
      const [before, started] = [usageByName(), performance.now()];
      for (const [change, commit, served] of kinds) {
        const seconds: number[] = [];
        for (let i = 1; i <= rounds; i++) {
          await commit(db, i);
          seconds.push(await servedAfter(performance.now(), () => served(i)));
        }
        rows.push({ engine: server.version, change, seconds });
      }
      const elapsed = (performance.now() - started) / 1000;
      usage.push({ engine: server.version, seconds: elapsed, use: usageBetween(before, usageByName(), 1) });
    } finally {
      await sync?.stop();
      await db.drop();
      await server.stop();
    }
  }
  return { rows, usage };
}

/**
 * A team of 100,000 projects through the limiter (DynamoDB's limits): seconds from a commit to the
 * answer by the sync (PostgreSQL), and from the import's start to the answer by the import (`npm run
 * import` of the whole snapshot with the change), for a project renamed, one added, one removed.
 */
export async function measureAtSize(ctx: PartContext): Promise<{ rows: LatencyRow[]; firstLoads: string[] }> {
  const size = ctx.quick ? 2_000 : 100_000;
  const rounds = ctx.quick ? 1 : 5;
  const limiter = await startDynamoDbLimiter({ target: ctx.endpoint });
  const server = await startServer('postgres');
  const data = benchTeams({ teams: 1, projects: size });
  const db = await seededDatabase(server, data);
  const file = join(tmpdir(), `bench-size-${process.pid}.json`);
  let sync: Awaited<ReturnType<typeof syncProcess>> | undefined;
  const rows: LatencyRow[] = [];
  const firstLoads: string[] = [];
  const label = size.toLocaleString('en');
  try {
    const synced = await freshTable(limiter.endpoint);
    const imported = await freshTable(limiter.endpoint);
    await setUp(db);
    let started = performance.now();
    ctx.say(`the sync's first full pass of a team of ${label} projects, through the limiter...`);
    sync = await syncProcess(db, synced);
    await servedAfter(started, async () => (await page(synced, 1)).meta?.total === size, 1_800);
    await sync.idle();
    firstLoads.push(`the sync's first full pass ${((performance.now() - started) / 1000).toFixed(0)} s`);
    ctx.say(`the import of the same team, through the limiter...`);
    writeFileSync(file, JSON.stringify(data));
    started = performance.now();
    await importSnapshot(file, imported);
    firstLoads.push(`the import ${((performance.now() - started) / 1000).toFixed(0)} s`);
    const middle = Math.floor(size / 2);
    const edit = editing(data);
    const changes: [string, (i: number) => [string, unknown[]], (i: number) => void, Served][] = [
      [
        'a project renamed',
        (i) => ['UPDATE projects SET name = $1 WHERE id = $2', [`Renamed ${i}`, projectId(TEAM, middle)]],
        (i) => edit.rename(projectId(TEAM, middle), `Renamed ${i}`),
        async (t, i) => (await page(t, middle + 1)).data[0].name === `Renamed ${i}`,
      ],
      [
        'a project added in the middle',
        (i) => [ADD, [projectId(TEAM, middle + i) + 1, TEAM, `Added ${i}`]],
        (i) => edit.add(projectId(TEAM, middle + i) + 1, `Added ${i}`),
        async (t, i) => (await page(t, 1)).meta.total === size + i,
      ],
      [
        'a project removed',
        (i) => ['DELETE FROM projects WHERE id = $1', [projectId(TEAM, Math.floor(size / 4) + i)]],
        (i) => edit.remove(projectId(TEAM, Math.floor(size / 4) + i)),
        async (t, i) => (await page(t, 1)).meta.total === size + rounds - i,
      ],
    ];
    for (const [change, statement, edited, served] of changes) {
      ctx.say(`${label} projects: ${change}, ${rounds} times by the sync and by the import...`);
      const [bySync, byImport] = [[] as number[], [] as number[]];
      for (let i = 1; i <= rounds; i++) {
        await db.query(...statement(i));
        bySync.push(await servedAfter(performance.now(), () => served(synced, i)));
        edited(i);
        writeFileSync(file, JSON.stringify(data));
        const since = performance.now();
        await importSnapshot(file, imported);
        byImport.push(await servedAfter(since, () => served(imported, i)));
      }
      rows.push({ engine: `${server.version}, the sync`, change, seconds: bySync });
      rows.push({ engine: 'the import (`npm run import`)', change, seconds: byImport });
    }
    ctx.say(`the limiter: ${throttledLine(limiter)}`);
    return { rows, firstLoads };
  } finally {
    await sync?.stop();
    rmSync(file, { force: true });
    await db.drop();
    await server.stop();
    await limiter.stop();
  }

  async function page(table: TestTable, position: number) {
    return (await api(table).get(`/api/${slugOf(TEAM)}/projects?per_page=1&page=${position}`, { token: OWNER_TOKEN }))
      .body;
  }
}

const throttledLine = (limiter: DynamoDbLimiter) =>
  Object.entries(limiter.stats().tables)
    .map(([table, s]) => `${table}: ${s.throttled} demands throttled`)
    .join('; ');

export interface WriteRow {
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
  const server = await startServer('postgres');
  const result: WriteCosts = { rows: [], overlays: [] };
  try {
    for (const size of sizes) result.rows.push(...(await writesAt(size, ctx, limiter, server, result)));
    return result;
  } finally {
    await server.stop();
    await limiter.stop();
  }
}

async function writesAt(
  size: number,
  ctx: PartContext,
  limiter: DynamoDbLimiter,
  server: Parameters<typeof seededDatabase>[0],
  result: WriteCosts,
): Promise<WriteRow[]> {
  const data = benchTeams({ teams: 1, projects: size, daemons: 300, members: 3 });
  data.users!.push({ id: outsider(0), teams: [] });
  data.tokens!.push({
    id: tokenId(outsider(0)),
    user_id: outsider(0),
    token: secretOf(tokenId(outsider(0))),
    abilities: ['*'],
  });
  const db = await seededDatabase(server, data);
  const [ours, base] = [
    countedTable(await freshTable(limiter.endpoint)),
    countedTable(await freshTable(limiter.endpoint)),
  ];
  await setUp(db);
  ctx.say(`a team of ${size.toLocaleString('en')} projects: the sync's first full pass, and the import...`);
  const sync = startSync(db, ours.table);
  try {
    await sync.readyNow;
    await importDocument(base.table, data);
    // Write units of a table, the sync's lease left out (at most one write every 15 s, whatever changes).
    const units = ({ tableName }: TestTable) => {
      const stats = limiter.stats().tables[tableName];
      return (stats?.writeUnits ?? 0) - (stats?.partitions.SYNC?.writeUnits ?? 0);
    };
    const sweep = (table: TestTable) => sweepReplaced(table, Date.now() + SWEEP_AFTER_MS + 1_000);
    const get = (route: string, token = OWNER_TOKEN) => api(ours.table).get(`/api/${slugOf(TEAM)}/${route}`, { token });
    const total = async () => (await get('projects?per_page=1')).body.meta?.total;
    await servedAfter(performance.now(), async () => (await total()) === size, 1_800);
    await quiet(ours.restart());
    const edit = editing(data);
    const middle = Math.floor(size / 2);
    const member = secretOf(tokenId(outsider(0)));
    const revoked = tokenId(userId(TEAM, 1));
    type Change = [statement: [string, unknown[]], edited: () => void, served?: () => Promise<boolean>];
    const kinds: [string, Change[], goal?: number][] = [
      [
        "nothing (Sanctum's last_used_at)",
        [[['update personal_access_tokens set last_used_at = CURRENT_TIMESTAMP where id = $1', [revoked]], () => {}]],
      ],
      [
        'one project renamed',
        [
          [
            ['UPDATE projects SET name = $1 WHERE id = $2', ['Renamed', projectId(TEAM, middle)]],
            () => edit.rename(projectId(TEAM, middle), 'Renamed'),
            async () => (await get(`projects?per_page=1&page=${middle + 1}`)).body.data[0].name === 'Renamed',
          ],
        ],
        10,
      ],
      [
        'one added after the last',
        [
          [
            [ADD, [projectId(TEAM, size), TEAM, 'Last']],
            () => edit.add(projectId(TEAM, size), 'Last'),
            async () => (await total()) === size + 1,
          ],
        ],
        10,
      ],
      [
        'one removed from the middle',
        [
          [
            ['DELETE FROM projects WHERE id = $1', [projectId(TEAM, middle + 1)]],
            () => edit.remove(projectId(TEAM, middle + 1)),
            async () => (await total()) === size,
          ],
        ],
        50,
      ],
      [
        'one added in the middle',
        [
          [
            [ADD, [projectId(TEAM, middle + 2) + 1, TEAM, 'Middle']],
            () => edit.add(projectId(TEAM, middle + 2) + 1, 'Middle'),
            async () => (await total()) === size + 1,
          ],
        ],
        50,
      ],
      [
        '20 removed from the middle, one by one (all 20)',
        Array.from(
          { length: 20 },
          (_, j): Change => [
            ['DELETE FROM projects WHERE id = $1', [projectId(TEAM, middle + 3 + j)]],
            () => edit.remove(projectId(TEAM, middle + 3 + j)),
            async () => (await total()) === size - j,
          ],
        ),
        1_000,
      ],
      [
        'a cost line',
        [
          [
            ['UPDATE costs SET amount = 6 WHERE team_id = $1', [TEAM]],
            () => {
              data.costs![0]!.amount = '6.00';
            },
            async () => (await get('finances')).body.data[0].amount === 6,
          ],
        ],
      ],
      [
        'a member added',
        [
          [
            [
              'INSERT INTO team_user (team_id, user_id, role, created_at, updated_at) ' +
                "VALUES ($1, $2, 'editor', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",
              [TEAM, outsider(0)],
            ],
            () => void data.users!.find((u) => u.id === outsider(0))!.teams!.push(TEAM),
            async () => (await get('projects?per_page=1', member)).status === 200,
          ],
        ],
      ],
      [
        'a token revoked',
        [
          [
            ['DELETE FROM personal_access_tokens WHERE id = $1', [revoked]],
            () =>
              void data.tokens!.splice(
                data.tokens!.findIndex((t) => t.id === revoked),
                1,
              ),
            async () => (await get('projects?per_page=1', secretOf(revoked))).status === 401,
          ],
        ],
      ],
    ];
    const rows: WriteRow[] = [];
    for (const [change, steps, goal] of kinds) {
      const ours_ = ours.restart();
      const oursFrom = units(ours.table);
      for (const [statement, edited, served] of steps) {
        const batches = sync.batches;
        await db.query(...statement);
        if (served) await servedAfter(performance.now(), async () => sync.batches > batches && (await served()));
        await quiet(ours_);
        edited();
      }
      await sweep(ours.table);
      // The whole-list rewrite: no fingerprint on the team's record, list heads that name no item (by
      // id, what a writer reads), so that every part counts as changed and each list is written whole.
      await base.table.doc.send(
        new UpdateCommand({
          TableName: base.table.tableName,
          Key: teamRecordKey(TEAM),
          UpdateExpression: 'REMOVE finance_fingerprint, members_fingerprint',
        }),
      );
      for (const list of LIST_RESOURCES) {
        await base.table.doc.send(
          new UpdateCommand({
            TableName: base.table.tableName,
            Key: listHeadKey(TEAM, list),
            UpdateExpression: 'SET #count = :none, #base = :none, fingerprint = :none_text REMOVE overlay',
            ExpressionAttributeNames: { '#count': 'count', '#base': 'base' },
            ExpressionAttributeValues: { ':none': 0, ':none_text': '' },
          }),
        );
      }
      const baseline = base.restart();
      const baseFrom = units(base.table);
      await importDocument(base.table, data);
      await sweep(base.table);
      rows.push({
        size,
        change,
        changes: steps.length,
        ours: ours_,
        oursUnits: units(ours.table) - oursFrom,
        baseline,
        // The rewrite of the list for each of the changes (the import wrote them at once).
        baselineUnits: (units(base.table) - baseFrom) * steps.length,
        goal,
      });
      if (steps.length > 1) for (const [kind, n] of baseline.byKind) baseline.byKind.set(kind, n * steps.length);
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
    return rows;
  } finally {
    await sync.stop();
    await db.drop();
  }
}

/** Resolves once nothing more has been written for 1.5 s (a batch's writes apart, its compaction). */
async function quiet(count: WriteCount): Promise<void> {
  for (let seen = -1; seen !== count.keys.length; ) {
    seen = count.keys.length;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
  }
}
