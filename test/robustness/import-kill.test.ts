import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ListResource, listHeadKey } from '../../shared/table/keys.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument, scanAll, type TestTable } from '../support/dynamodb.ts';
import { runImportCli, snapshotFiles } from '../support/import-process.ts';
import { daemons, environment, projects, server, snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * An import killed part-way (SIGKILL while it validates a 5 MB file, and while it writes an
 * 8,300-item team) leaves readers on the team as it was, with its own members, and no token the snapshot
 * brings valid; rerun at once, it takes over the dead import's lease at once (same machine, its
 * process is gone) and completes; the team is as the snapshot says, and the killed generation's
 * items are gone. An invalid snapshot writes nothing at all.
 */
const SECRET = 'import-kill-secret';
const NEW_SECRET = 'import-kill-new-member';
// Large enough that the kill lands with most of the items still to write (the progress display
// counts them from 5,000 items on), and no larger: every item is written twice (the killed run and
// the rerun) into the DynamoDB Local the suite shares.
const BIG = 8_000;
const BIG_DAEMONS = 300;
const KILL_AFTER_ITEMS = 2_000;

let table: TestTable;
let api: TestApi;
let files: Awaited<ReturnType<typeof snapshotFiles>>;

const oldSnapshot = snapshot({
  teams: [team(1, 'big'), team(2, 'bystander')],
  users: [user(10, [1, 2]), user(11, [1])],
  tokens: [token(10, SECRET)],
  environments: [environment(5, 1), environment(6, 2)],
  servers: [server(7, 1, '10.00'), server(8, 2, '1.00')],
  projects: [...projects(1, 50), ...projects(2, 3)],
  daemons: [...daemons(5, 7, 5), ...daemons(6, 8, 2)],
});
/** Team 1 again, much larger, with other names and a new member. */
const newSnapshot = (projectCount: number) =>
  snapshot({
    teams: [team(1, 'big')],
    users: [user(10, [1]), user(13, [1])],
    tokens: [token(13, NEW_SECRET)],
    environments: [environment(5, 1)],
    servers: [server(7, 1, '99.99')],
    projects: projects(1, projectCount, 1).map((p) => ({ ...p, name: `new ${p.id} ${'x'.repeat(200)}` })),
    daemons: daemons(5, 7, BIG_DAEMONS),
  });

beforeAll(async () => {
  table = await freshTable();
  await importDocument(table, oldSnapshot);
  api = await startApi(table);
  files = await snapshotFiles();
});
afterAll(async () => {
  await api?.close();
  await files?.cleanup();
});

/** Items of team 1's generations of its lists (projects and daemons each have their own), counted by generation. */
async function generationsOf(teamId: number) {
  const counts = new Map<string, number>();
  for (const item of await scanAll(table)) {
    const match = /^TEAM#(\d+)#G([^#]+)#(projects|daemons)$/.exec(String(item.pk));
    if (match && Number(match[1]) === teamId) counts.set(match[2]!, (counts.get(match[2]!) ?? 0) + 1);
  }
  return counts;
}

/** The generation the list's head (by id) names: the one readers use. */
async function generationOf(teamId: number, list: ListResource) {
  const { Item } = await table.doc.send(
    new GetCommand({ TableName: table.tableName, Key: listHeadKey(teamId, list), ConsistentRead: true }),
  );
  return String(Item?.generation);
}

/** What a reader sees of team 1: the total, and whether the items are the old or the new ones. */
async function readTeam(secret = SECRET) {
  const res = await api.get('/api/big/projects?per_page=3', { token: secret });
  if (res.status !== 200) return { status: res.status };
  const names: string[] = res.body.data.map((p: { name: string }) => p.name);
  const kind = names.every((n) => n.startsWith('new '))
    ? 'new'
    : names.every((n) => n.startsWith('Project '))
      ? 'old'
      : 'mixed';
  return { total: res.body.meta.total as number, kind };
}

/** A canonical text of every item, to compare the table before and after. */
async function tableImage(): Promise<string[]> {
  const replacer = (_key: string, value: unknown) => (value instanceof Set ? [...value].sort() : value);
  return (await scanAll(table)).map((item) => JSON.stringify(item, replacer)).sort();
}

/** Runs the import, reading all the while; SIGKILLs it when `killWhen` says so. */
async function importWhileReading(file: string, killWhen?: (line: string) => boolean) {
  const lines: string[] = [];
  const run = runImportCli(table, file, (line) => {
    lines.push(line);
    if (killWhen?.(line) && run.child.exitCode === null) run.child.kill('SIGKILL');
  });
  const seen: string[] = [];
  let done = false;
  const readers = (async () => {
    while (!done) {
      const view = JSON.stringify(await readTeam());
      // The import keeps DynamoDB Local busy: on a loaded machine a read may take longer than the
      // function waits, and the contract's answer is then 503 (never an inconsistent 200).
      if (view === UNAVAILABLE) continue;
      if (seen.at(-1) !== view) seen.push(view);
    }
  })();
  const exited = await run.exited;
  done = true;
  await readers;
  return { exited, lines, seen };
}

const writtenOf = (line: string) => Number(/^writing items ([\d,]+)\//.exec(line)?.[1]?.replace(/,/g, '') ?? -1);
const OLD = JSON.stringify({ total: 50, kind: 'old' });
const UNAVAILABLE = JSON.stringify({ status: 503 });
const NEW = JSON.stringify({ total: BIG, kind: 'new' });

// First, while the table is small: each of these compares an image of the whole table.
describe('an invalid snapshot', () => {
  it('is rejected whole, with a message per problem, and writes nothing', async () => {
    const image = await tableImage();
    const file = await files.write({
      teams: [team(3, 'fresh')],
      users: [user(30, [3])],
      tokens: [token(30, 'never-stored-secret')],
      projects: [
        ...projects(3, 5),
        { id: 9, team_id: 3, client_id: null, name: 'bad time', slug: 'x', created_at: 'yesterday' },
        { id: 10, team_id: 3, client_id: 77, name: 'no client', slug: 'y', created_at: '2026-01-01T00:00:00Z' },
      ],
      costs: [{ team_id: 3, label: 'Backups', amount: '-1', currency: 'eur' }],
    });
    const result = await runImportCli(table, file).exited;
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/projects\[5\] \(id 9\): created_at/);
    expect(result.stderr).toMatch(/costs\[0\]/);
    expect(await tableImage()).toEqual(image);
  });

  it('is rejected before writing when the table makes it unusable (a slug another team holds)', async () => {
    const image = await tableImage();
    const file = await files.write({
      teams: [team(4, 'bystander')],
      users: [user(40, [4])],
      projects: projects(4, 30),
    });
    const result = await runImportCli(table, file).exited;
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('slug "bystander" is already used by team 2');
    expect(await tableImage()).toEqual(image);
  });

  it('is rejected when it is not JSON at all, and writes nothing', async () => {
    const image = await tableImage();
    const result = await runImportCli(table, await files.write('{"teams": [')).exited;
    expect(result.stderr).toContain('the file is not valid JSON: syntax error at line 1, column');
    expect(result.code).not.toBe(0);
    expect(await tableImage()).toEqual(image);
  });
});

describe('an import killed part-way', () => {
  it('killed while it validates, has written nothing', async () => {
    // Over 5 MB: the progress display speaks of validating.
    const file = await files.write(newSnapshot(20_000));
    const image = await tableImage();
    const { exited, lines } = await importWhileReading(file, (line) => line.startsWith('validating '));
    expect(exited.signal).toBe('SIGKILL');
    expect(lines.some((line) => line.startsWith('validating '))).toBe(true);
    expect(await tableImage()).toEqual(image);
  });

  it('killed while it writes, leaves readers on the old team and no new token valid; rerun, it completes at once', async () => {
    const file = await files.write(newSnapshot(BIG));
    const oldProjects = await generationOf(1, 'projects');
    const oldDaemons = await generationOf(1, 'daemons');
    const bystanderBefore = (await tableImage()).filter(
      (line) => line.includes('"TEAM#2#') || line.includes('TEAMREF#2"') || line.includes('TEAMREF#bystander"'),
    );

    // 1. Kill it while it writes items; readers read all the while.
    const killed = await importWhileReading(file, (line) => writtenOf(line) >= KILL_AFTER_ITEMS);
    expect(killed.exited.signal).toBe('SIGKILL');
    const written = Math.max(...killed.lines.map(writtenOf));
    expect(written).toBeGreaterThanOrEqual(KILL_AFTER_ITEMS);
    expect(written).toBeLessThan(BIG + BIG_DAEMONS);
    expect(killed.seen).toEqual([OLD]);

    // 2. After the kill: the old team, with its old members; the snapshot's new token is not valid.
    expect(await readTeam()).toEqual({ total: 50, kind: 'old' });
    expect(await readTeam(NEW_SECRET)).toEqual({ status: 401 });
    expect((await api.get('/api/big/daemons', { token: SECRET })).body.meta.total).toBe(5);
    expect((await api.get('/api/big/finances', { token: SECRET })).body.totals).toEqual({ EUR: 10 });
    const afterKill = await generationsOf(1);
    expect(afterKill.get(oldProjects)).toBe(50);
    expect(afterKill.get(oldDaemons)).toBe(5);
    const killedGenerations = [...afterKill.keys()].filter((g) => g !== oldProjects && g !== oldDaemons);
    expect(killedGenerations.length).toBeGreaterThanOrEqual(1); // the new projects (and the daemons, if it got there)
    expect(killedGenerations.length).toBeLessThanOrEqual(2);
    expect(await generationOf(1, 'projects')).toBe(oldProjects);
    const killedItems = killedGenerations.reduce((n, g) => n + afterKill.get(g)!, 0);
    console.info(
      `import killed after ${written} items written; ${killedItems} items of the killed generations in the table`,
    );

    // 3. Rerun at once: the dead import's lease is taken over at once; readers see old, then new.
    const started = performance.now();
    const rerun = await importWhileReading(file);
    expect(rerun.exited.code, rerun.exited.stderr).toBe(0);
    // Neither for the import's lease nor for a team's lock.
    expect(rerun.exited.stderr).not.toContain('waiting for');
    expect(rerun.exited.stdout).toContain(
      `imported 1 team (${(BIG + BIG_DAEMONS).toLocaleString('en')} projects and daemons)`,
    );
    expect(rerun.seen.filter((s) => s !== OLD && s !== NEW)).toEqual([]);
    expect(rerun.seen.indexOf(OLD)).toBeLessThanOrEqual(0); // old only before new
    console.info(
      `rerun completed in ${((performance.now() - started) / 1000).toFixed(1)} s; readers saw ${rerun.seen.join(' then ')}`,
    );

    // 4. The team is as the snapshot says, with the snapshot's members.
    expect(await readTeam()).toEqual({ total: BIG, kind: 'new' });
    expect(await readTeam(NEW_SECRET)).toEqual({ total: BIG, kind: 'new' });
    const last = await api.get(`/api/big/projects?per_page=50&page=${BIG / 50}`, { token: SECRET });
    expect(last.body.data.map((p: { id: number }) => p.id)).toEqual(Array.from({ length: 50 }, (_, i) => BIG - 49 + i));
    const middle = await api.get('/api/1/projects?per_page=7&page=1000', { token: SECRET });
    expect(middle.body.data.map((p: { id: number }) => p.id)).toEqual(
      Array.from({ length: 7 }, (_, i) => 999 * 7 + 1 + i),
    );
    expect((await api.get('/api/big/daemons', { token: SECRET })).body.meta.total).toBe(BIG_DAEMONS);
    expect((await api.get('/api/big/finances', { token: SECRET })).body.totals).toEqual({ EUR: 99.99 });

    // 5. The killed generations are gone; the replaced ones stay (for 5 minutes) for late readers.
    const generations = await generationsOf(1);
    for (const killed of killedGenerations) expect(generations.get(killed)).toBeUndefined();
    expect(Object.fromEntries(generations)).toEqual({
      [await generationOf(1, 'projects')]: BIG,
      [await generationOf(1, 'daemons')]: BIG_DAEMONS,
      [oldProjects]: 50,
      [oldDaemons]: 5,
    });
    const items = await scanAll(table);
    const ledger = items.filter((item) => String(item.pk).startsWith('LEDGER#'));
    expect(ledger.map((item) => String(item.sk)[0])).toEqual(['R', 'R']); // nothing pending; the old lists retired
    // The import's lease and every team's lock were given back.
    expect(items.filter((item) => item.pk === 'IMPORT' || String(item.pk).startsWith('LOCK#'))).toEqual([]);
    // The other team was never touched.
    const bystanderAfter = (await tableImage()).filter(
      (line) => line.includes('"TEAM#2#') || line.includes('TEAMREF#2"') || line.includes('TEAMREF#bystander"'),
    );
    expect(bystanderAfter).toEqual(bystanderBefore);
    // Projects, daemons, a member; each list's head and the finance summary by id and by slug, the team's
    // record, and each list's item hashes (shared/write/list-hashes.ts).
    expect(bystanderAfter.length).toBe(3 + 2 + 1 + 3 * 2 + 1 + 2);
  }, 120_000);
});
