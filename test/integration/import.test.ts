import { beforeEach, describe, expect, it } from 'vitest';
import { hashToken } from '../../shared/api/bearer.ts';
import { importSnapshot, ImportRejected } from '../../commands/import/importer.ts';
import { LeaseHeld } from '../../shared/write/lease.ts';
import { revoke } from '../../commands/tokens/tokens.ts';
import { isMember, ShortPage, TeamReader } from '../../shared/api/team-reader.ts';
import { freshTable, importDocument, scanAll, type TestTable } from '../support/dynamodb.ts';
import { validateDocument } from '../support/validate.ts';
import { daemons, environment, projects, server, snapshot, team, token, user } from '../support/snapshots.ts';

/** docs/contract.md, section 7: what an import does to the table, as a reader sees it. */
let table: TestTable;
let reader: TeamReader;
beforeEach(async () => {
  table = await freshTable();
  reader = new TeamReader(table.client, { tableName: table.tableName });
});

/** What a reader with this token sees of a team: null when the API would answer 401/404. */
async function view(secret: string, teamRef: string) {
  const { token: stored, team: head } = await reader.readTokenAndHead(hashToken(secret), teamRef, 'projects');
  if (!stored || stored.inactive || stored.revokedAt || !head || !isMember(stored, head)) return null;
  const { team: finance } = await reader.readTokenAndFinance(hashToken(secret), teamRef);
  const ids = async (resource: 'projects' | 'daemons') => {
    const { team: list } = await reader.readTokenAndHead(hashToken(secret), teamRef, resource);
    const count = list!.list.count;
    if (count === 0) return [];
    return (await reader.readPage(list!, { first: 1, last: count })).map(
      (json) => (JSON.parse(json) as { id: number }).id,
    );
  };
  return {
    projects: await ids('projects'),
    daemons: await ids('daemons'),
    finance: JSON.parse(`{${finance!.fieldsJson}}`),
    abilities: stored.abilities,
  };
}

const base = () =>
  snapshot({
    teams: [team(1, 'acme'), team(2, 'globex')],
    users: [user(10, [1, 2]), user(11, [1])],
    tokens: [token(10, 'ada-secret', ['*']), token(11, 'bob-secret', ['projects:read'])],
    environments: [environment(5, 1), environment(6, 2)],
    servers: [server(7, 1, '10.00'), server(8, 2, '20.00')],
    projects: [...projects(1, 30), ...projects(2, 5)],
    daemons: [...daemons(5, 7, 4), ...daemons(6, 8, 2)],
  });
const projectIds = (teamId: number, count: number, first = teamId * 100_000 + 1) =>
  Array.from({ length: count }, (_, i) => first + i);

describe('import', () => {
  it('makes a team exactly what the snapshot gives it', async () => {
    await importDocument(table, base());
    const acme = await view('ada-secret', 'acme');
    expect(acme?.projects).toEqual(projectIds(1, 30));
    expect(acme?.daemons).toEqual(projectIds(5, 4));
    expect(acme?.finance.totals).toEqual({ EUR: 10 });
  });

  it('replaces a re-imported team as a whole: no project, daemon or cost of the old one survives', async () => {
    await importDocument(table, base());
    await importDocument(
      table,
      snapshot({
        teams: [team(1, 'acme')],
        users: [user(10, [1])],
        environments: [environment(5, 1)],
        servers: [server(9, 1, '1.50', 'USD')],
        projects: projects(1, 3, 900),
      }),
    );
    const acme = await view('ada-secret', 'acme');
    expect(acme?.projects).toEqual([900, 901, 902]);
    expect(acme?.daemons).toEqual([]);
    expect(acme?.finance).toMatchObject({ totals: { USD: 1.5 }, grand_total: 1.5 });
  });

  it('leaves teams that are not in the snapshot alone', async () => {
    await importDocument(table, base());
    await importDocument(table, snapshot({ teams: [team(1, 'acme')], projects: projects(1, 2) }));
    const globex = await view('ada-secret', 'globex');
    expect(globex?.projects).toEqual(projectIds(2, 5));
    expect(globex?.daemons).toEqual(projectIds(6, 2));
  });

  it("gives a replaced team exactly the snapshot's members: a user who no longer lists it, or is absent, loses it", async () => {
    await importDocument(table, base());
    // Ada now lists only initech; Bob is absent from the snapshot. Both lose acme, which the
    // snapshot replaces; Ada keeps globex, which the snapshot does not speak for.
    await importDocument(table, snapshot({ teams: [team(1, 'acme'), team(3, 'initech')], users: [user(10, [3])] }));
    expect(await view('ada-secret', 'acme')).toBeNull();
    expect(await view('ada-secret', 'globex')).not.toBeNull();
    expect(await view('ada-secret', 'initech')).not.toBeNull();
    expect(await view('bob-secret', 'acme')).toBeNull();
  });

  it('upserts tokens: abilities follow the snapshot, a revocation survives a re-import', async () => {
    await importDocument(table, base());
    await revoke(table.doc, table.tableName, { secret: 'ada-secret' });
    await importDocument(
      table,
      snapshot({
        teams: [team(1, 'acme')],
        users: [user(10, [1]), user(11, [1])],
        tokens: [token(10, 'ada-secret', ['*']), token(11, 'bob-secret', ['daemons:read'])],
      }),
    );
    expect(await view('ada-secret', 'acme')).toBeNull();
    expect((await view('bob-secret', 'acme'))?.abilities).toEqual(['daemons:read']);
  });

  it('moves a team to a new slug: the old one no longer answers', async () => {
    await importDocument(table, base());
    await importDocument(
      table,
      snapshot({ teams: [team(1, 'acme-inc')], users: [user(10, [1])], projects: projects(1, 1) }),
    );
    expect(await view('ada-secret', 'acme')).toBeNull();
    expect((await view('ada-secret', 'acme-inc'))?.projects).toEqual(projectIds(1, 1));
    expect((await view('ada-secret', '1'))?.projects).toEqual(projectIds(1, 1));
  });

  it('lets a team take the slug another team of the same snapshot gives up', async () => {
    await importDocument(table, base());
    await importDocument(
      table,
      snapshot({ teams: [team(1, 'globex'), team(2, 'globex-old')], users: [user(10, [1, 2]), user(11, [1])] }),
    );
    expect((await view('ada-secret', 'globex'))?.projects).toEqual([]);
    expect(await view('bob-secret', 'globex')).toEqual(expect.objectContaining({ projects: [] }));
    expect(await view('ada-secret', 'globex-old')).not.toBeNull();
  });

  it('rejects, before writing anything, a slug that a team outside the snapshot holds', async () => {
    await importDocument(table, base());
    const before = await scanAll(table);
    const plan = await validateDocument(snapshot({ teams: [team(3, 'globex')] }));
    if (!plan.ok) throw new Error('fixture');
    const attempt = importSnapshot(table.doc, table.tableName, plan.snapshot);
    await expect(attempt).rejects.toBeInstanceOf(ImportRejected);
    await expect(attempt).rejects.toThrow('teams[0] (id 3): slug "globex" is already used by team 2');
    expect(await scanAll(table)).toEqual(before);
  });

  it('keeps every replaced generation for 5 minutes however many imports follow, then sweeps it', async () => {
    const generationsOfAcme = async () => {
      const items = (await scanAll(table)).filter((i) => /^TEAM#1#G[^#]+#projects$/.test(String(i.pk)));
      return new Set(items.map((i) => String(i.pk).split('#')[2]));
    };
    let now = Date.parse('2026-01-01T00:00:00Z');
    const clock = () => now;
    // Each import replaces the projects (other ids each time), so each writes a generation of its own:
    // an unchanged list is not written again, and one that changes by a few items changes by the item.
    let round = 1;
    const changed = () => snapshot({ teams: [team(1, 'acme')], projects: projects(1, 10, 1_000 * round++) });
    for (let i = 0; i < 4; i++) {
      await importDocument(table, changed(), { clock });
      now += 60_000; // an import a minute
    }
    expect((await generationsOfAcme()).size).toBe(4); // the current one and three replaced within 5 minutes
    now += 5 * 60_000;
    await importDocument(table, changed(), { clock });
    // Retired 4 minutes ago at most when this import ran: the last replaced one stays, with the new current one.
    const left = await generationsOfAcme();
    expect(left.size).toBeGreaterThanOrEqual(2);
    expect(left.size).toBeLessThanOrEqual(3);
    now += 10 * 60_000;
    await importDocument(table, changed(), { clock });
    expect((await generationsOfAcme()).size).toBe(2); // the current one and the one it just replaced
    const members = (await scanAll(table)).filter((i) => String(i.pk).endsWith('#MEMBER'));
    expect(new Set(members.map((i) => String(i.pk).split('#')[2])).size).toBeLessThanOrEqual(2);
  });

  it('keeps every version a change by the item replaced readable from the old head for 5 minutes, then sweeps it', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const clock = () => now;
    let round = 0;
    /** Acme with its third project renamed (one item changed: the list changes by the item). */
    const acme = (rename = true) => {
      const list = projects(1, 10);
      if (rename) list[2]!.name = `renamed ${++round}`;
      return snapshot({
        teams: [team(1, 'acme')],
        users: [user(10, [1])],
        tokens: [token(10, 'ada-secret')],
        projects: list,
      });
    };
    const head = async () => (await reader.readTokenAndHead(hashToken('ada-secret'), 'acme', 'projects')).team!;
    const names = async (from: Awaited<ReturnType<typeof head>>) =>
      (await reader.readPage(from, { first: 1, last: 10 })).map((json) => (JSON.parse(json) as { name: string }).name);
    const stored = async () => {
      const items = await scanAll(table);
      return {
        projects: items.filter((i) => /^TEAM#1#G[^#]+#projects$/.test(String(i.pk))),
        replaced: items.filter((i) => String(i.pk).startsWith('LEDGER#') && String(i.sk).startsWith('V#')),
      };
    };
    await importDocument(table, acme(false), { clock });
    const first = await head();
    for (let i = 0; i < 4; i++) {
      now += 60_000; // an import a minute
      await importDocument(table, acme(), { clock });
    }
    // One generation throughout: each import wrote the renamed item's new version beside the others.
    let { projects: items, replaced } = await stored();
    expect(new Set(items.map((i) => i.pk)).size).toBe(1);
    expect(items).toHaveLength(10 + 4);
    expect(replaced).toHaveLength(4);
    // A reader still holding the first head reads its page as it was; the current head, as it is.
    expect((await names(first))[2]).toBe('Project 100003');
    expect((await names(await head()))[2]).toBe('renamed 4');
    now += 10 * 60_000;
    await importDocument(table, acme(), { clock });
    // Swept: every version replaced more than 5 minutes ago; the one this import replaced stays.
    ({ projects: items, replaced } = await stored());
    expect(items).toHaveLength(10 + 1);
    expect(replaced).toHaveLength(1);
    expect((await names(await head()))[2]).toBe('renamed 5');
    // A request that held the first head that long is refused (503), never served a short page.
    await expect(names(first)).rejects.toBeInstanceOf(ShortPage);
  });
});

describe('consistency while importing', () => {
  it('shows readers the team as it was while an import is under way, then as it is', async () => {
    await importDocument(table, base());
    const seen: (number[] | undefined)[] = [];
    await importDocument(
      table,
      snapshot({ teams: [team(1, 'acme')], users: [user(10, [1])], projects: projects(1, 400, 7000) }),
      {
        onProgress: async () => {
          seen.push((await view('ada-secret', 'acme'))?.projects);
        },
      },
    );
    expect(seen.length).toBeGreaterThan(5);
    expect(
      seen.every(
        (ids) =>
          JSON.stringify(ids) === JSON.stringify(projectIds(1, 30)) ||
          JSON.stringify(ids) === JSON.stringify(projectIds(1, 400, 7000)),
      ),
    ).toBe(true);
    expect((await view('ada-secret', 'acme'))?.projects).toEqual(projectIds(1, 400, 7000));
  });

  it('survives an import that dies part-way: readers see the old team, a rerun completes and removes the debris', async () => {
    await importDocument(table, base());
    const next = snapshot({ teams: [team(1, 'acme')], users: [user(10, [1])], projects: projects(1, 300, 5000) });
    let batches = 0;
    const crash = importDocument(table, next, {
      onProgress: (p) => {
        if (p.phase === 'writing' && ++batches === 5) throw new Error('killed');
      },
    });
    await expect(crash).rejects.toThrow('killed');
    expect((await view('ada-secret', 'acme'))?.projects).toEqual(projectIds(1, 30));
    const debris = (await scanAll(table)).filter((i) => String(i.pk).startsWith('TEAM#1#'));
    expect(debris.length).toBeGreaterThan(34); // 30 projects + 4 daemons, plus the dead import's items

    await importDocument(table, next);
    expect((await view('ada-secret', 'acme'))?.projects).toEqual(projectIds(1, 300, 5000));
    // The dead import's generation is gone; the replaced one stays (for 5 minutes), with its members.
    const left = (await scanAll(table)).filter((i) => /^TEAM#1#G[^#]+#(projects|daemons)$/.test(String(i.pk)));
    expect(left).toHaveLength(300 + 34);
  });

  it('refuses a second import while one runs, with a message naming it; the first completes', async () => {
    await importDocument(table, base());
    const racing = snapshot({ teams: [team(1, 'acme')], projects: projects(1, 1, 42) });
    let second: Promise<unknown> | undefined;
    const first = importDocument(
      table,
      snapshot({ teams: [team(1, 'acme')], users: [user(10, [1])], projects: projects(1, 60, 9000) }),
      {
        // A short lease, renewed often, so that the second import sees it alive within a second.
        lock: { leaseMs: 3_000, renewEveryMs: 200 },
        onProgress: async (p) => {
          if (p.phase === 'writing' && !second) {
            second = importDocument(table, racing);
            await second.catch(() => {});
          }
        },
      },
    );
    await first;
    await expect(second).rejects.toBeInstanceOf(LeaseHeld);
    await expect(second).rejects.toThrow(
      /another import is running .* run this import again when that one has finished/,
    );
    expect((await view('ada-secret', 'acme'))?.projects).toEqual(projectIds(1, 60, 9000));
  });
});

describe('secrets', () => {
  it('stores no plaintext token, only SHA-256 hashes', async () => {
    await importDocument(table, base());
    const text = JSON.stringify(await scanAll(table));
    for (const secret of ['ada-secret', 'bob-secret']) {
      expect(text).not.toContain(`"${secret}"`);
      expect(text).toContain(`TOKEN#${hashToken(secret)}`);
    }
  });
});
