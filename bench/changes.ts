import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { importSnapshot } from '../commands/import/importer.ts';
import { validateSnapshotFile } from '../commands/import/validation.ts';
import { ensureTable } from '../commands/store/table.ts';
import { createDynamoDbClient } from '../shared/table/dynamodb-client.ts';
import { LIST_RESOURCES, listHeadKey, teamRecordKey } from '../shared/table/keys.ts';
import { defaultMapping } from '../shared/sync/mapping.ts';
import { setUpSource } from '../shared/sync/setup.ts';
import { parseSourceUrl } from '../shared/sync/source/url.ts';
import { connectSource } from '../shared/sync/source/connection.ts';
import { runSync } from '../shared/sync/sync.ts';
import { onEveryWrite } from '../shared/write/writer.ts';
import { createSourceDatabase, type SourceDatabase } from '../test/support/source-databases.ts';
import { seedSource } from '../test/support/source-seed.ts';
import { type RunningServer, startMariaDb, startPostgres } from '../test/support/source-servers.ts';
import { WriteCount } from '../test/support/writes.ts';
import { apiFunctions } from './requests.ts';

/**
 * What a change costs and how soon it is served (docs/performance.md, "Changes"): the items an
 * import writes for each kind of change of a team of 2,000 projects and 300 daemons, against the
 * whole-team rewrite (the same import with the team's fingerprints taken away and its lists' heads
 * emptied, so that every part is written again and each list whole, as every import did before parts
 * changed alone and lists by the item); and the seconds from a commit in
 * PostgreSQL and MariaDB to the first answer of the API that shows it, per kind of change, with the
 * sync's triggers, against the sync's full pass alone (what a design without change capture gets).
 */
const PROJECTS = 2_000;
const DAEMONS = 300;

interface Table {
  endpoint: string;
  tableName: string;
  doc: DynamoDBDocumentClient;
}

let tables = 0;

async function newTable(endpoint: string, name: string): Promise<Table> {
  const client = createDynamoDbClient({ endpoint, maxAttempts: 5, requestTimeoutMs: 30_000 });
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  const tableName = `bench-${name}-${++tables}`;
  await ensureTable(doc, tableName);
  return { endpoint, tableName, doc };
}

// ---- Items written per kind of change (the import) ----------------------------------------------

type Change = { costs?: string; serverCost?: string; daemons?: number; projectName?: string; members?: number[] };

function teamDocument(change: Change = {}) {
  const members = change.members ?? [10, 11, 12];
  const projects = Array.from({ length: PROJECTS }, (_, i) => ({
    id: 1 + i,
    team_id: 1,
    name: i === 1234 && change.projectName ? change.projectName : `Project ${i + 1}`,
    slug: `project-${i + 1}`,
    created_at: '2026-01-02T03:04:05Z',
  }));
  const daemons = Array.from({ length: change.daemons ?? DAEMONS }, (_, i) => ({
    id: 1 + i,
    environment_id: 5,
    server_id: 7,
    name: `daemon-${i + 1}`,
    command: 'php artisan queue:work',
    username: 'forge',
    directory: '/home/forge/app',
    processes: 1,
  }));
  return {
    teams: [{ id: 1, slug: 'big', name: 'Big' }],
    users: [10, 11, 12, 13].map((id) => ({ id, name: `User ${id}`, teams: members.includes(id) ? [1] : [] })),
    tokens: [10, 11, 12, 13].map((id) => ({ user_id: id, token: `bench-token-of-${id}`, abilities: ['*'] })),
    environments: [{ id: 5, team_id: 1, name: 'production' }],
    servers: [{ id: 7, team_id: 1, name: 'web-1', monthly_cost: change.serverCost ?? '24.15', currency: 'EUR' }],
    projects,
    daemons,
    costs: [{ team_id: 1, label: 'Backups', amount: change.costs ?? '5.00', currency: 'EUR' }],
  };
}

export interface WriteCostRow {
  change: string;
  ours: WriteCount;
  /** Items the whole-team rewrite writes for the same change. */
  baseline: WriteCount;
}

export async function measureWriteCosts(endpoint: string): Promise<WriteCostRow[]> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-changes-'));
  const changes: [string, Change][] = [
    ['the same snapshot again', {}],
    ['one cost line', { costs: '6.00' }],
    ["one server's cost", { serverCost: '30.00' }],
    ['one daemon fewer', { daemons: DAEMONS - 1 }],
    ['one project renamed', { projectName: 'renamed' }],
    ['one member added', { members: [10, 11, 12, 13] }],
  ];
  try {
    const rows: WriteCostRow[] = [];
    for (const [label, change] of changes) {
      const [ours, baseline] = [await newTable(endpoint, 'ours'), await newTable(endpoint, 'whole')];
      for (const table of [ours, baseline]) await importInto(table, dir, teamDocument());
      // The whole-team rewrite: no fingerprint on the team's record, and list heads that name no item
      // (by id, what a writer reads), so that every part counts as changed and each list is written whole.
      await baseline.doc.send(
        new UpdateCommand({
          TableName: baseline.tableName,
          Key: teamRecordKey(1),
          UpdateExpression: 'REMOVE finance_fingerprint, members_fingerprint',
        }),
      );
      for (const list of LIST_RESOURCES) {
        await baseline.doc.send(
          new UpdateCommand({
            TableName: baseline.tableName,
            Key: listHeadKey(1, list),
            UpdateExpression: 'SET #count = :none, #base = :none, fingerprint = :none_text REMOVE overlay',
            ExpressionAttributeNames: { '#count': 'count', '#base': 'base' },
            ExpressionAttributeValues: { ':none': 0, ':none_text': '' },
          }),
        );
      }
      rows.push({
        change: label,
        ours: await importInto(ours, dir, teamDocument(change)),
        baseline: await importInto(baseline, dir, teamDocument(change)),
      });
    }
    return rows;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

let snapshots = 0;

/** Imports a document through a file, as the import command does, counting the items written. */
async function importInto(table: Table, dir: string, document: unknown): Promise<WriteCount> {
  const file = join(dir, `snapshot-${++snapshots}.json`);
  await writeFile(file, JSON.stringify(document));
  const validation = await validateSnapshotFile(file);
  if (!validation.ok) throw new Error(validation.problems.join('\n'));
  const count = new WriteCount();
  const client = createDynamoDbClient({ endpoint: table.endpoint, maxAttempts: 5, requestTimeoutMs: 30_000 });
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  onEveryWrite(doc, (key) => count.add(key));
  await importSnapshot(doc, table.tableName, validation.snapshot);
  return count;
}

// ---- From commit to answer (the sync) --------------------------------------------------------------

export interface LatencyRow {
  engine: string;
  change: string;
  /** Seconds from each commit to the first answer that showed it. */
  seconds: number[];
}

type Engine = 'postgres' | 'mysql';

/** Seconds from the commit of `change` to the first answer for which `served` holds. */
async function servedAfter(change: () => Promise<unknown>, served: () => Promise<boolean>): Promise<number> {
  await change();
  const committed = performance.now();
  for (;;) {
    if (await served()) return (performance.now() - committed) / 1000;
    if (performance.now() - committed > 60_000) throw new Error('a change was not served within 60 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function measureSyncLatency(
  dynamodbEndpoint: string,
  rounds: number,
  log: (line: string) => void,
): Promise<LatencyRow[]> {
  const rows: LatencyRow[] = [];
  for (const engine of ['postgres', 'mysql'] as Engine[]) {
    let server: RunningServer;
    try {
      server = engine === 'postgres' ? await startPostgres() : await startMariaDb();
    } catch (error) {
      log(`${engine}: not measured (${(error as Error).message})`);
      continue;
    }
    try {
      log(`${server.version}: ${rounds} rounds of each kind of change...`);
      rows.push(...(await latencies(server, dynamodbEndpoint, rounds, false)));
      log(`${server.version}: the full pass alone (every 10 s), the baseline...`);
      rows.push(...(await latencies(server, dynamodbEndpoint, Math.max(3, Math.ceil(rounds / 2)), true)));
    } finally {
      await server.stop();
    }
  }
  return rows;
}

async function latencies(server: RunningServer, endpoint: string, rounds: number, fullPassOnly: boolean) {
  const engine = server.engine;
  const db = await createSourceDatabase(engine, { server });
  const table = await newTable(endpoint, engine);
  const now = engine === 'postgres' ? 'now()' : 'NOW()';
  const stop = new AbortController();
  try {
    const document = teamDocument();
    await seedSource(db, {
      ...document,
      teams: [{ id: 1, slug: 'big', name: 'Big', user_id: 10 }],
      tokens: document.tokens.map((token, i) => ({ ...token, id: 70 + i })),
    });
    const mapping = defaultMapping(engine);
    if (!fullPassOnly) await prepare(db);
    else await prepare(db, { ...mapping, watch: { teams: mapping.watch.teams! } });
    const running = runSync(
      {
        source: parseSourceUrl(db.url),
        mapping: fullPassOnly ? { ...mapping, watch: { teams: mapping.watch.teams! } } : mapping,
        timezone: 'UTC',
        table: { doc: table.doc, tableName: table.tableName },
        say: () => {},
        metric: () => {},
        ...(fullPassOnly && { fullPassEveryMs: 10_000 }),
      },
      { signal: stop.signal },
    );
    running.catch(() => {});
    const api = requests(table);
    await until(async () => (await api('/api/big/projects', 'bench-token-of-10')).status === 200);
    const projectName = async () => (await api('/api/big/projects?per_page=1', 'bench-token-of-10')).body.data[0].name;
    const kinds: [string, (i: number) => Promise<unknown>, (i: number) => Promise<boolean>][] = fullPassOnly
      ? [
          [
            'a project renamed (raw UPDATE)',
            (i) => db.query(`UPDATE projects SET name = 'Full ${i}' WHERE id = 1`),
            async (i) => (await projectName()) === `Full ${i}`,
          ],
        ]
      : [
          [
            'a project inserted',
            (i) =>
              db.query(
                'INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) ' +
                  `VALUES (${10_000 + i}, 1, 'n', 'n', ${now}, ${now})`,
              ),
            async (i) =>
              (await api('/api/big/projects?per_page=1', 'bench-token-of-10')).body.meta.total === PROJECTS + i,
          ],
          [
            'a project renamed (raw UPDATE)',
            (i) => db.query(`UPDATE projects SET name = 'Renamed ${i}' WHERE id = 1`),
            async (i) => (await projectName()) === `Renamed ${i}`,
          ],
          [
            'a project deleted',
            (i) => db.query(`DELETE FROM projects WHERE id = ${10_000 + i}`),
            async (i) =>
              (await api('/api/big/projects?per_page=1', 'bench-token-of-10')).body.meta.total ===
              PROJECTS + rounds - i,
          ],
          [
            'a daemon changed',
            (i) => db.query(`UPDATE daemons SET processes = ${i + 2} WHERE id = 1`),
            async (i) =>
              (await api('/api/big/daemons?per_page=1', 'bench-token-of-10')).body.data[0].processes === i + 2,
          ],
          [
            'a cost line changed',
            (i) => db.query(`UPDATE costs SET amount = ${10 + i} WHERE team_id = 1`),
            async (i) => (await api('/api/big/finances', 'bench-token-of-10')).body.data[0].amount === 10 + i,
          ],
          [
            'a member added',
            () => db.query(`INSERT INTO team_user (team_id, user_id, role) VALUES (1, 13, 'editor')`),
            async () => (await api('/api/big/projects?per_page=1', 'bench-token-of-13')).status === 200,
          ],
          [
            'a member removed',
            () => db.query('DELETE FROM team_user WHERE team_id = 1 AND user_id = 13'),
            async () => (await api('/api/big/projects?per_page=1', 'bench-token-of-13')).status === 404,
          ],
          [
            'a token revoked (Sanctum deletes it)',
            () => db.query('DELETE FROM personal_access_tokens WHERE id = 72'),
            async () => (await api('/api/big/projects?per_page=1', 'bench-token-of-12')).status === 401,
          ],
        ];
    const rows: LatencyRow[] = [];
    for (const [change, commit, served] of kinds) {
      const seconds: number[] = [];
      const once = change.startsWith('a member') || change.startsWith('a token');
      for (let i = 1; i <= (once ? 1 : rounds); i++)
        seconds.push(
          await servedAfter(
            () => commit(i),
            () => served(i),
          ),
        );
      rows.push({ engine: server.version, change: fullPassOnly ? `${change}, full pass alone` : change, seconds });
    }
    return rows;
  } finally {
    stop.abort();
    await db.drop();
  }
}

async function prepare(db: SourceDatabase, mapping = defaultMapping(db.engine)): Promise<void> {
  const connection = await connectSource(parseSourceUrl(db.url));
  try {
    await setUpSource(connection, mapping, 'bench');
  } finally {
    await connection.close();
  }
}

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 1_200; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the first full pass took more than a minute');
}

/** The API's handlers over the table, in this process: what a client would be answered. */
function requests(table: Table) {
  const { warm } = apiFunctions(table.endpoint, table.tableName);
  return async (target: string, token: string) => {
    const answer = await warm(target, token);
    return { status: answer.status, body: answer.status === 200 ? JSON.parse(answer.body) : undefined };
  };
}
