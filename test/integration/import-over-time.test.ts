import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../shared/api/bearer.ts';
import { type Key, tokenKey, userTokenKey } from '../../shared/table/keys.ts';
import { importSnapshot } from '../../commands/import/importer.ts';
import { itemSize } from '../../shared/write/item-size.ts';
import { createToken } from '../../commands/tokens/tokens.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument, interceptedTable, Killed, scanAll, type TestTable } from '../support/dynamodb.ts';
import { projects, snapshot, team, token, user } from '../support/snapshots.ts';
import { validateDocument } from '../support/validate.ts';

/**
 * Case by case: imports that stay right however often they run, and wherever they are
 * killed (docs/contract.md, section 7). Kills and pauses happen at chosen DynamoDB calls of the
 * import (interceptedTable); readers are the real functions behind the local server.
 */
let table: TestTable;
let api: TestApi;
beforeAll(async () => {
  table = await freshTable();
  api = await startApi(table);
});
afterAll(async () => {
  await api?.close();
});

const answer = async (secret: string, teamRef: string, resource = 'projects') => {
  const res = await api.get(`/api/${teamRef}/${resource}?per_page=50`, { token: secret });
  return res.status === 200 ? `200 ${res.body.meta.total}` : String(res.status);
};
const storedToken = async (secret: string) =>
  (
    await table.doc.send(
      new GetCommand({ TableName: table.tableName, Key: tokenKey(hashToken(secret)), ConsistentRead: true }),
    )
  ).Item;

/** An import through a client that is killed (or paused) at the call `at` chooses. */
async function importKilled(document: unknown, at: Parameters<typeof interceptedTable>[1]) {
  const killed = interceptedTable(table, at);
  await expect(importDocument(killed.table, document)).rejects.toThrow(Killed);
  await killed.afterKill();
}
const killAtSwitch = (n: number) => (operation: string, count: number) => {
  if (operation === 'TransactWriteItems' && count === n) throw new Killed(operation);
};
/** A kill before the new tokens are written: at the batch that writes the first token item (after their indexes). */
const killBeforeTokenWritten = (operation: string, _n: number, input: Record<string, unknown>) => {
  const requests = Object.values((input.RequestItems ?? {}) as Record<string, { PutRequest?: { Item: Key } }[]>);
  if (operation === 'BatchWriteItem' && requests.flat().some((r) => r.PutRequest?.Item.pk.startsWith('TOKEN#')))
    throw new Killed(operation);
};

describe('case 1: history never blocks, and never grows a token', () => {
  // Each import replaces all 200 generations: entries of replaced generations kept on the token, for
  // however few imports, make it larger after the second import than after the first (when they
  // were kept, fifteen imports took it from 9 KB to 72 KB); the third and fourth show that it does
  // not grow later either.
  const IMPORTS = 4;
  it('imports a user in 200 teams four times in a row, each succeeding, the token as large as after the first', async () => {
    const teams = Array.from({ length: 200 }, (_, i) => team(1_000 + i, `many-${i}`));
    const document = snapshot({
      teams,
      users: [
        user(
          100,
          teams.map((t) => t.id),
        ),
      ],
      tokens: [token(100, 'many-teams-secret')],
    });
    const sizes: number[] = [];
    for (let i = 0; i < IMPORTS; i++) {
      await importDocument(table, document);
      sizes.push(itemSize((await storedToken('many-teams-secret'))!));
    }
    expect(sizes).toEqual(Array(IMPORTS).fill(sizes[0]));
    expect((await storedToken('many-teams-secret'))!.memberships.size).toBe(200);
    expect(await answer('many-teams-secret', 'many-199')).toBe('200 0');
  }, 300_000);
});

describe('case 2: tokens narrowing first, widening last', () => {
  const teams = [team(20, 'narrow-a'), team(21, 'narrow-b')];
  const users = [user(20, [20, 21])];
  const before = snapshot({
    teams,
    users,
    projects: [...projects(20, 2), ...projects(21, 2)],
    tokens: [
      token(20, 'expiring-secret'),
      token(20, 'downgraded-secret'),
      token(20, 'widened-secret', ['daemons:read']),
      token(20, 'witness-secret'),
    ],
  });
  const after = snapshot({
    teams,
    users,
    projects: [...projects(20, 5), ...projects(21, 5)],
    tokens: [
      token(20, 'expiring-secret', ['*'], { expires_at: '2020-01-01T00:00:00Z' }),
      token(20, 'downgraded-secret', ['daemons:read']),
      token(20, 'widened-secret', ['*']),
      token(20, 'witness-secret'),
    ],
  });

  it('a kill right after the first switch leaves no expired or downgraded token reading a new state, and nothing widened', async () => {
    await importDocument(table, before);
    await importKilled(after, killAtSwitch(2));
    // One team switched, the other not: the witness token sees one new state and one old.
    expect([await answer('witness-secret', 'narrow-a'), await answer('witness-secret', 'narrow-b')].sort()).toEqual([
      '200 2',
      '200 5',
    ]);
    for (const teamRef of ['narrow-a', 'narrow-b']) {
      expect(await answer('expiring-secret', teamRef)).toBe('401');
      expect(await answer('downgraded-secret', teamRef)).toBe('403');
      expect(await answer('downgraded-secret', teamRef, 'daemons')).toBe('200 0');
      expect(await answer('widened-secret', teamRef)).toBe('403'); // granted only after the last switch
    }
    await importDocument(table, after);
    for (const teamRef of ['narrow-a', 'narrow-b']) {
      expect(await answer('expiring-secret', teamRef)).toBe('401');
      expect(await answer('downgraded-secret', teamRef)).toBe('403');
      expect(await answer('widened-secret', teamRef)).toBe('200 5');
    }
  });
});

describe('case 3: a token created while an import runs reads every team of its user', () => {
  const teams = Array.from({ length: 10 }, (_, i) => team(30 + i, `created-${i}`));
  const users = [
    user(
      30,
      teams.map((t) => t.id),
    ),
  ];
  const state = (count: number) => snapshot({ teams, users, projects: teams.flatMap((t) => projects(t.id, count)) });
  const totals = async (secret: string) => Promise.all(teams.map((t) => answer(secret, t.slug)));

  it('created while the import writes and before its first switch, reads all ten teams half-way, old or new', async () => {
    await importDocument(table, state(1));
    const secrets: string[] = [];
    const halfWay: string[][] = [];
    const create = async () =>
      secrets.push(
        await createToken(table.doc, table.tableName, {
          userId: 30,
          abilities: ['*'],
          name: 'during',
          expiresAt: null,
        }),
      );
    const paused = interceptedTable(table, async (operation, n) => {
      if (operation === 'BatchWriteItem' && n === 1) await create();
      if (operation === 'TransactWriteItems' && n === 1) await create();
      if (operation === 'TransactWriteItems' && n === 6)
        for (const secret of secrets) halfWay.push(await totals(secret));
    });
    await importDocument(paused.table, state(3));
    expect(secrets).toHaveLength(2);
    for (const seen of halfWay) expect(seen.toSorted()).toEqual([...Array(5).fill('200 1'), ...Array(5).fill('200 3')]);
    for (const secret of secrets) expect(await totals(secret)).toEqual(Array(10).fill('200 3'));
  });

  it('created before the first switch of an import killed after its last, reads all ten teams for good', async () => {
    let secret = '';
    let switched = 0;
    await importKilled(state(4), async (operation) => {
      if (operation === 'TransactWriteItems' && ++switched === 1)
        secret = await createToken(table.doc, table.tableName, {
          userId: 30,
          abilities: ['*'],
          name: 'killed',
          expiresAt: null,
        });
      else if (operation !== 'TransactWriteItems' && switched === 10) throw new Killed(operation);
    });
    expect(await totals(secret)).toEqual(Array(10).fill('200 4'));
  });
});

describe("case 4: a killed import's tokens not yet written", () => {
  // A token a write brings is written once, whole and valid, after the last switch (its user's index
  // and its Sanctum id's item first, then the token): killed before that, the token does not exist.
  const base = snapshot({
    teams: [team(40, 'lingering'), team(42, 'forty-only')],
    users: [user(40, [40]), user(41, [40])],
  });
  const withToken = (userId: number, users: unknown[] = base.users!) =>
    snapshot({ ...base, users, tokens: [token(userId, 'lingering-secret')] });
  const index = async (userId: number) =>
    (
      await table.doc.send(
        new GetCommand({
          TableName: table.tableName,
          Key: userTokenKey(userId, hashToken('lingering-secret')),
          ConsistentRead: true,
        }),
      )
    ).Item;

  it('are not valid, and the next import may give the secret to another user, whose token reads only its own teams', async () => {
    await importDocument(table, base);
    await importKilled(withToken(40), killBeforeTokenWritten);
    expect(await storedToken('lingering-secret')).toBeUndefined();
    expect(await answer('lingering-secret', 'lingering')).toBe('401');
    await importDocument(table, withToken(41));
    expect(await answer('lingering-secret', 'lingering')).toBe('200 0');
    expect((await storedToken('lingering-secret'))!.user_id).toBe(41);
    expect(await index(41)).toBeDefined();
    // The killed import had indexed the token under user 40: user 40 joining a team, or leaving one,
    // never changes what user 41's token reads.
    await importDocument(table, withToken(41, [user(40, [40, 42]), user(41, [40])]));
    expect(await answer('lingering-secret', 'forty-only')).toBe('404');
    await importDocument(table, withToken(41, [user(40, [42]), user(41, [40])]));
    expect(await answer('lingering-secret', 'lingering')).toBe('200 0');
    expect([...(await storedToken('lingering-secret'))!.memberships]).toEqual([expect.stringMatching(/^40#/)]);
  });

  it('leave no token behind when the next import does not bring them', async () => {
    await importKilled(snapshot({ ...base, tokens: [token(40, 'removed-secret')] }), killBeforeTokenWritten);
    expect(await storedToken('removed-secret')).toBeUndefined();
    await importDocument(table, base);
    expect(await storedToken('removed-secret')).toBeUndefined();
    expect(await answer('removed-secret', 'lingering')).toBe('401');
  });
});

describe('case 5: numbers are judged as written', () => {
  it.each([
    [
      '{"teams":[{"id":800.0000000000000001,"slug":"a","name":"A"}]}',
      'teams[0] (id 800.0000000000000001): id must be a positive integer',
    ],
    [
      '{"teams":[{"id":9007199254740993,"slug":"a","name":"A"}]}',
      'teams[0] (id 9007199254740993): id must be at most 9007199254740991',
    ],
    [
      '{"teams":[{"id":1,"slug":"a","name":"A"}],"costs":[{"team_id":1,"label":"x","amount":5.00000000000000001,"currency":"EUR"}]}',
      'costs[0]: amount has more than 4 decimals',
    ],
    [
      '{"teams":[{"id":1,"slug":"a","name":"A"}],"users":[{"id":2,"teams":[1.5]}]}',
      'users[0] (id 2): teams[0] must be a positive integer',
    ],
  ])('%s is refused: %s', async (text, problem) => {
    const result = await validateDocument(text, { raw: true });
    expect(result.ok ? [] : result.problems).toContain(problem);
  });

  it('takes -0 and "-0" as 0, and 1.0 and 1e2 as the integers they are', async () => {
    const result = await validateDocument(
      '{"teams":[{"id":1e2,"slug":"zeros","name":"Z"}],"users":[{"id":50,"teams":[100.0]}],"tokens":[{"user_id":50,"token":"zeros-secret","abilities":["*"]}],' +
        '"costs":[{"team_id":100,"label":"a","amount":-0,"currency":"EUR"},{"team_id":100,"label":"b","amount":"-0","currency":"EUR"}]}',
      { raw: true },
    );
    if (!result.ok) throw new Error(result.problems.join('\n'));
    await importSnapshot(table.doc, table.tableName, result.snapshot);
    expect((await api.get('/api/zeros/finances', { token: 'zeros-secret' })).body).toMatchObject({
      totals: { EUR: 0 },
      grand_total: 0,
    });
  });
});

describe('case 6: the teams-per-user cap and slug swaps', () => {
  it('refuses a user listing 1,001 teams, in validation', async () => {
    const teams = Array.from({ length: 1_001 }, (_, i) => team(5_000 + i));
    const result = await validateDocument(
      snapshot({
        teams,
        users: [
          user(
            60,
            teams.map((t) => t.id),
          ),
        ],
      }),
    );
    expect(result.ok ? [] : result.problems).toContain('users[0] (id 60): teams must list at most 1,000 teams');
  });

  it('refuses, before writing, a user who would list 1,001 teams with one it is in outside the snapshot', async () => {
    await importDocument(table, snapshot({ teams: [team(6_000, 'kept')], users: [user(61, [6_000])] }));
    const teams = Array.from({ length: 1_000 }, (_, i) => team(7_000 + i));
    const result = await validateDocument(
      snapshot({
        teams,
        users: [
          user(
            61,
            teams.map((t) => t.id),
          ),
        ],
      }),
    );
    if (!result.ok) throw new Error('fixture');
    await expect(importSnapshot(table.doc, table.tableName, result.snapshot)).rejects.toThrow(
      'users[0] (id 61): teams would list 1,001 teams with those it is in outside this snapshot, more than the 1,000 a user may be in',
    );
  });

  it('refuses two teams exchanging slugs, naming both with their indexes', async () => {
    await importDocument(table, snapshot({ teams: [team(400, 'swap-a'), team(401, 'swap-b')] }));
    const result = await validateDocument(snapshot({ teams: [team(400, 'swap-b'), team(401, 'swap-a')] }));
    if (!result.ok) throw new Error('fixture');
    const refused = importSnapshot(table.doc, table.tableName, result.snapshot);
    await expect(refused).rejects.toThrow(
      'teams[0] (id 400): slug "swap-b" is held by teams[1] (id 401), which takes slug "swap-a" in turn; rename in two imports',
    );
    await expect(refused).rejects.toThrow('teams[1] (id 401): slug "swap-a" is held by teams[0] (id 400)');
  });
});

describe('case 7: a list changed by the item, killed before its switch', () => {
  // A change by the item writes the new versions into the generation readers use, then switches the
  // list's head to them: killed in between, the versions are there, named by no head.
  const renamed = (...indexes: number[]) => {
    const list = projects(70, 10);
    for (const i of indexes) list[i]!.name = `renamed ${list[i]!.id}`;
    return snapshot({
      teams: [team(70, 'by-item')],
      users: [user(70, [70])],
      tokens: [token(70, 'by-item-secret')],
      projects: list,
    });
  };
  const names = async () =>
    (await api.get('/api/by-item/projects?per_page=10', { token: 'by-item-secret' })).body.data.map(
      (p: { name: string }) => p.name,
    );
  const items = async () => (await scanAll(table)).filter((i) => /^TEAM#70#G[^#]+#projects$/.test(String(i.pk)));

  it('leaves readers on the list as it was; the next write of the team clears the versions no head names', async () => {
    await importDocument(table, renamed());
    await importKilled(renamed(2), killAtSwitch(1));
    expect((await names())[2]).toBe('Project 7000003');
    expect(await items()).toHaveLength(10 + 1); // the killed import's version of the third project
    // Rerun: completes; the third project's first version stays (for readers of the old head) until swept.
    await importDocument(table, renamed(2));
    expect((await names())[2]).toBe('renamed 7000003');
    expect(await items()).toHaveLength(10 + 1);
    // Killed again, renaming the fifth; the next import renames the seventh instead.
    await importKilled(renamed(2, 4), killAtSwitch(1));
    expect(await items()).toHaveLength(10 + 1 + 1);
    await importDocument(table, renamed(2, 6));
    expect(await names()).toEqual(projects(70, 10).map((p, i) => ([2, 6].includes(i) ? `renamed ${p.id}` : p.name)));
    // The ten it serves and the two versions it replaced; nothing of the killed fifth.
    const left = await items();
    expect(left).toHaveLength(10 + 2);
    expect(left.filter((i) => String(i.j).includes('renamed 7000005'))).toEqual([]);
  });
});
