import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument, scanAll, type TestTable } from '../support/dynamodb.ts';
import { runImportCli, snapshotFiles } from '../support/import-process.ts';
import { daemons, environment, projects, server, snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * An import killed part-way (SIGKILL while it writes an 8,000-project team) leaves readers on
 * the team as it was; rerunning it completes, the team is as the snapshot says, and the killed
 * generation's items are gone. An invalid snapshot writes nothing at all.
 */
const SECRET = 'import-kill-secret';
// Large enough that the kill lands with most of the items still to write, and no larger: every
// item is written twice (the killed run and the rerun) into the DynamoDB Local the suite shares.
const BIG = 8_000;
const BIG_DAEMONS = 300;
const KILL_AFTER_ITEMS = 2_000;

let table: TestTable;
let api: TestApi;
let files: Awaited<ReturnType<typeof snapshotFiles>>;

const before = snapshot({
  teams: [team(1, 'big'), team(2, 'bystander')],
  users: [user(10, [1, 2])],
  tokens: [token(10, SECRET)],
  environments: [environment(5, 1), environment(6, 2)],
  servers: [server(7, 1, '10.00'), server(8, 2, '1.00')],
  projects: [...projects(1, 50), ...projects(2, 3)],
  daemons: [...daemons(5, 7, 5), ...daemons(6, 8, 2)],
});
/** Team 1 again, much larger, with other names: a reader can tell the two apart by any item. */
const after = snapshot({
  teams: [team(1, 'big')],
  // No users: user 10 keeps its memberships (users absent from a snapshot are left alone).
  environments: [environment(5, 1)],
  servers: [server(7, 1, '99.99')],
  projects: projects(1, BIG, 1).map((p) => ({ ...p, name: `new ${p.id}` })),
  daemons: daemons(5, 7, BIG_DAEMONS),
});

beforeAll(async () => {
  table = await freshTable();
  await importDocument(table, before);
  api = await startApi(table);
  files = await snapshotFiles();
});
afterAll(async () => {
  await api?.close();
  await files?.cleanup();
});

/** Items of the table grouped by the team generation partition they belong to. */
async function generationsOf(teamId: number) {
  const counts = new Map<string, number>();
  for (const item of await scanAll(table)) {
    const match = /^TEAM#(\d+)#G([^#]+)#/.exec(String(item.pk));
    if (match && Number(match[1]) === teamId) counts.set(match[2]!, (counts.get(match[2]!) ?? 0) + 1);
  }
  return counts;
}

async function head(teamId: number) {
  const items = await scanAll(table);
  return items.find((item) => item.pk === `TEAMREF#${teamId}` && item.sk === 'HEAD') as Record<string, unknown>;
}

/** What a reader sees of team 1: the total, and whether the items are the old or the new ones. */
async function readTeam() {
  const res = await api.get('/api/big/projects?per_page=3', { token: SECRET });
  expect(res.status, res.text).toBe(200);
  return seenIn(res.body);
}

function seenIn(body: { data: { name: string }[]; meta: { total: number } }) {
  const names = body.data.map((p) => p.name);
  const kind = names.every((n) => n.startsWith('new ')) ? 'new' : names.every((n) => n.startsWith('Project ')) ? 'old' : 'mixed';
  return { total: body.meta.total, kind };
}

/**
 * What a reader sees while an import writes: the team as above, or `unavailable`. The import
 * keeps DynamoDB Local busy, and on a loaded machine a read may take longer than the function
 * waits: the contract's answer is then 503 (never an inconsistent 200), which is allowed here.
 */
async function readTeamDuringImport(): Promise<string> {
  const res = await api.get('/api/big/projects?per_page=3', { token: SECRET });
  if (res.status === 503 && res.text === '{"message":"Service Unavailable"}') return 'unavailable';
  expect(res.status, res.text).toBe(200);
  const { total, kind } = seenIn(res.body);
  return `${total}/${kind}`;
}

/** A canonical text of every item, to compare the table before and after. */
async function tableImage(): Promise<string[]> {
  const replacer = (_key: string, value: unknown) => (value instanceof Set ? [...value].sort() : value);
  return (await scanAll(table)).map((item) => JSON.stringify(item, replacer)).sort();
}

describe('an import killed part-way', () => {
  it('leaves readers on the old team; rerun, it completes and the killed generation is collected', async () => {
    const file = await files.write(after);
    const oldGeneration = (await head(1)).generation as string;
    const bystanderBefore = (await tableImage()).filter((line) => line.includes('"TEAM#2#') || line.includes('TEAMREF#2"') || line.includes('TEAMREF#bystander"'));

    // 1. Start the import, watch its progress, and SIGKILL it while it writes items.
    let written = 0;
    let phasesSeen = new Set<string>();
    const run = runImportCli(table, file, (line) => {
      const match = /(writing items|switching teams|removing old data) ([\d,]+)\/([\d,]+)/.exec(line);
      if (!match) return;
      phasesSeen.add(match[1]!);
      if (match[1] === 'writing items') written = Number(match[2]!.replace(/,/g, ''));
      if (written >= KILL_AFTER_ITEMS && run.child.exitCode === null) run.child.kill('SIGKILL');
    });
    // Readers keep reading all the while: they must only ever see the old team.
    const seenWhileRunning = new Set<string>();
    let done = false;
    const readers = (async () => {
      while (!done) seenWhileRunning.add(await readTeamDuringImport());
    })();
    const killed = await run.exited;
    done = true;
    await readers;
    expect(killed.signal).toBe('SIGKILL');
    expect([...phasesSeen]).toEqual(['writing items']);
    expect(written).toBeGreaterThanOrEqual(KILL_AFTER_ITEMS);
    expect(written).toBeLessThan(BIG + BIG_DAEMONS);
    expect([...seenWhileRunning].filter((seen) => seen !== 'unavailable')).toEqual(['50/old']);

    // 2. After the kill: still the old team for readers; the killed generation is half-written garbage.
    expect(await readTeam()).toEqual({ total: 50, kind: 'old' });
    const daemonsRes = await api.get('/api/big/daemons', { token: SECRET });
    expect(daemonsRes.body.meta.total).toBe(5);
    expect((await api.get('/api/big/finances', { token: SECRET })).body.totals).toEqual({ EUR: 10 });
    const afterKill = await generationsOf(1);
    expect(afterKill.get(oldGeneration)).toBe(55);
    const killedGenerations = [...afterKill.keys()].filter((g) => g !== oldGeneration);
    expect(killedGenerations).toHaveLength(1);
    const killedGeneration = killedGenerations[0]!;
    expect(afterKill.get(killedGeneration)).toBeGreaterThan(0);
    expect(afterKill.get(killedGeneration)).toBeLessThan(BIG + BIG_DAEMONS);
    expect((await head(1)).generation).toBe(oldGeneration);

    console.info(`import killed after ${written} items written; ${afterKill.get(killedGeneration)} items of the killed generation in the table; readers saw ${[...seenWhileRunning]}`);

    // 3. Rerun: it completes; readers see old then new, never a mix, never back.
    const seenWhileRerunning: string[] = [];
    done = false;
    const rerun = runImportCli(table, file);
    const rereaders = (async () => {
      while (!done) {
        const seen = await readTeamDuringImport();
        if (seen !== 'unavailable' && seenWhileRerunning.at(-1) !== seen) seenWhileRerunning.push(seen);
      }
    })();
    const completed = await rerun.exited;
    done = true;
    await rereaders;
    expect(completed.code, completed.stderr).toBe(0);
    expect(completed.stdout).toContain(`imported 1 teams (${BIG + BIG_DAEMONS} projects and daemons)`);
    expect(seenWhileRerunning.filter((s) => s !== '50/old' && s !== `${BIG}/new`)).toEqual([]);
    expect(seenWhileRerunning.indexOf('50/old')).toBeLessThanOrEqual(0); // old only before new

    console.info(`rerun completed; readers saw ${seenWhileRerunning.join(' then ')}`);

    // 4. The team is as the snapshot says.
    expect(await readTeam()).toEqual({ total: BIG, kind: 'new' });
    const last = await api.get(`/api/big/projects?per_page=50&page=${BIG / 50}`, { token: SECRET });
    expect(last.body.data.map((p: { id: number }) => p.id)).toEqual(Array.from({ length: 50 }, (_, i) => BIG - 49 + i));
    const middle = await api.get('/api/1/projects?per_page=7&page=1000', { token: SECRET });
    expect(middle.body.data.map((p: { id: number }) => p.id)).toEqual(Array.from({ length: 7 }, (_, i) => 999 * 7 + 1 + i));
    expect((await api.get('/api/big/daemons', { token: SECRET })).body.meta.total).toBe(BIG_DAEMONS);
    expect((await api.get('/api/big/finances', { token: SECRET })).body.totals).toEqual({ EUR: 99.99 });

    // 5. Garbage: the killed generation has no item left; the previous one stays for late readers.
    const generations = await generationsOf(1);
    const current = (await head(1)).generation as string;
    expect(generations.get(killedGeneration)).toBeUndefined();
    expect(Object.fromEntries(generations)).toEqual({ [current]: BIG + BIG_DAEMONS, [oldGeneration]: 55 });
    const teamHead = await head(1);
    expect((teamHead.pending as Set<string> | undefined)?.size ?? 0).toBe(0);
    expect((teamHead.retired as Set<string> | undefined)?.size ?? 0).toBe(0);
    // The other team was never touched.
    const bystanderAfter = (await tableImage()).filter((line) => line.includes('"TEAM#2#') || line.includes('TEAMREF#2"') || line.includes('TEAMREF#bystander"'));
    expect(bystanderAfter).toEqual(bystanderBefore);
    expect(bystanderAfter.length).toBe(3 + 2 + 2); // projects, daemons, two head copies
  }, 120_000);
});

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
    const file = await files.write({ teams: [team(4, 'bystander')], users: [user(40, [4])], projects: projects(4, 30) });
    const result = await runImportCli(table, file).exited;
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('slug "bystander" is already used by team 2');
    expect(await tableImage()).toEqual(image);
  });

  it('is rejected when it is not JSON at all, and writes nothing', async () => {
    const image = await tableImage();
    const result = await runImportCli(table, await files.write('{"teams": [')).exited;
    expect(result.code).not.toBe(0);
    expect(await tableImage()).toEqual(image);
  });
});
