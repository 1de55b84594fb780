import { beforeEach, describe, expect, it } from 'vitest';
import { hashToken } from '../../shared/api/bearer.ts';
import { isMember, TeamReader } from '../../shared/api/team-reader.ts';
import { freshTable, importDocument, scanAll, type TestTable } from '../support/dynamodb.ts';
import { runImportCli } from '../support/import-process.ts';
import { environment, projects, server, snapshot, team, token, user } from '../support/snapshots.ts';
import { snapshotFile } from '../support/validate.ts';

/**
 * What an import must never do to the data (docs/contract.md, section 7), rule by rule, against
 * DynamoDB Local through `npm run import` (or the import library where a failure is injected).
 * Readers during many imports, and killed imports, are in test/robustness (import-readers.test.ts,
 * import-kill.test.ts); a snapshot of 200,000 projects streamed, never held whole, is
 * import-streamed.test.ts (in the `at-size` project).
 */
let table: TestTable;
let reader: TeamReader;
beforeEach(async () => {
  table = await freshTable();
  reader = new TeamReader(table.client, { tableName: table.tableName });
});

/** What the API would let this token read of a team: its project ids, or null (401/404). */
async function projectIds(secret: string, teamRef: string): Promise<number[] | null> {
  const { token: stored, team: head } = await reader.readTokenAndHead(hashToken(secret), teamRef, 'projects');
  if (!stored || stored.inactive || stored.revokedAt || !head || !isMember(stored, head)) return null;
  if (head.list.count === 0) return [];
  return (await reader.readPage(head, { first: 1, last: head.list.count })).map(
    (json) => (JSON.parse(json) as { id: number }).id,
  );
}

/** A canonical text of every item, to show a rejected import changed nothing. */
async function tableImage(): Promise<string[]> {
  const replacer = (_key: string, value: unknown) => (value instanceof Set ? [...value].sort() : value);
  return (await scanAll(table)).map((item) => JSON.stringify(item, replacer)).sort();
}

async function importFile(document: unknown, options: { raw?: boolean } = {}) {
  return runImportCli(table, await snapshotFile(document, options)).exited;
}

const startingSnapshot = () =>
  snapshot({
    teams: [team(1, 'acme'), team(2, 'globex')],
    users: [user(10, [1, 2]), user(11, [1])],
    tokens: [token(10, 'ada-secret'), token(11, 'bob-secret')],
    projects: [...projects(1, 3), ...projects(2, 2)],
  });

describe('a typo is never read as "no projects" or "no members"', () => {
  it('rejects "Projects" for "projects", with the hint, and writes nothing', async () => {
    await importDocument(table, startingSnapshot());
    const image = await tableImage();
    const result = await importFile({ teams: [team(1, 'acme')], users: [user(10, [1])], Projects: projects(1, 5) });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('unknown collection "Projects" (did you mean "projects"?)');
    expect(await tableImage()).toEqual(image);
    expect(await projectIds('ada-secret', 'acme')).toEqual([100_001, 100_002, 100_003]);
  });

  it('rejects a user with "team" for "teams", naming the record, and keeps every member', async () => {
    await importDocument(table, startingSnapshot());
    const image = await tableImage();
    const result = await importFile({ teams: [team(1, 'acme')], users: [{ id: 10, name: 'Ada', team: [1] }] });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('users[0] (id 10): unknown field "team" (did you mean "teams"?)');
    expect(await tableImage()).toEqual(image);
    expect(await projectIds('bob-secret', 'acme')).not.toBeNull();
  });

  it('names the closest allowed key even where the record has it too', async () => {
    const result = await importFile({ teams: [{ id: 1, slug: 'acme', name: 'Acme', Name: 'ACME' }] });
    expect(result.stderr).toContain('teams[0] (id 1): unknown field "Name" (did you mean "name"?)');
  });

  it('rejects a key that appears twice in one object', async () => {
    const text = '{"teams":[{"id":1,"slug":"acme","name":"Acme","slug":"other"}]}';
    const result = await importFile(text, { raw: true });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('teams[0] (id 1): the key "slug" appears twice in one object');
  });
});

describe('nothing is imported in part because a later team is too large', () => {
  it('rejects, before the first write, a later team whose finance item exceeds 400 KB in bytes, naming it', async () => {
    await importDocument(table, startingSnapshot());
    const image = await tableImage();
    // 3-byte characters: each label is within 255 characters, the team's item is not within 400 KB.
    const label = (i: number) => `${String(i).padStart(4, '0')}${'€'.repeat(251)}`;
    const result = await importFile({
      teams: [team(1, 'acme'), team(2, 'globex'), team(3, 'huge')],
      users: [user(10, [1, 2, 3]), user(12, [3])],
      tokens: [token(10, 'ada-secret', ['projects:read']), token(12, 'new-user-secret')],
      projects: projects(1, 50),
      costs: Array.from({ length: 600 }, (_, i) => ({ team_id: 3, label: label(i), amount: '1', currency: 'EUR' })),
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /teams\[2\] \(id 3\): its finance summary would be [\d,]+ bytes in DynamoDB, more than the 409,600 an item may hold/,
    );
    expect(await tableImage()).toEqual(image);
  });

  it('rejects an amount past the bounds with its message, and a team whose total reaches 100,000,000,000', async () => {
    const result = await importFile({
      teams: [team(1, 'acme'), team(2, 'globex')],
      servers: [
        server(7, 1, '100000000000'),
        server(8, 1, '1.00001'),
        server(9, 2, '99999999999.9999'),
        server(10, 2, '0.0001'),
      ],
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('servers[0] (id 7): monthly_cost must be below 100,000,000,000');
    expect(result.stderr).toContain('servers[1] (id 8): monthly_cost has more than 4 decimals');
    expect(result.stderr).toContain(
      "teams[1] (id 2): the team's EUR costs add up to 100000000000, not below 100,000,000,000",
    );
  });
});

describe('team slugs are path segments that need no escaping', () => {
  it('rejects a slug with a lone surrogate, or anything but ASCII letters, digits, - and _', async () => {
    const result = await importFile({
      teams: [team(1, 'caf\ud800'), team(2, 'a.b'), team(3, '..'), team(4, 'x y'), team(5, 'ok_slug-1')],
    });
    expect(result.code).toBe(1);
    for (const index of [0, 1, 2, 3])
      expect(result.stderr).toContain(
        `teams[${index}] (id ${index + 1}): slug must be ASCII letters, digits, "-" and "_" only`,
      );
    expect(result.stderr).not.toContain('teams[4]');
  });

  it('imports the same teams again and again without a false "changed while it was imported"', async () => {
    for (let i = 0; i < 3; i++) {
      const result = await importFile({
        teams: [team(1, 'Acme_Corp-1'), team(2, 'acme_corp-1')],
        users: [user(10, [1, 2])],
        tokens: [token(10, 'ada-secret')],
      });
      expect(result.code, result.stderr).toBe(0);
    }
    expect(await projectIds('ada-secret', 'Acme_Corp-1')).toEqual([]);
  });

  it('rejects strings that are not well-formed or hold control characters', async () => {
    const result = await importFile({
      teams: [team(1, 'acme', 'bad \udc00 name'), team(2, 'globex', 'bell \u0007'), team(3, 'initech', 'c1 \u009b')],
    });
    expect(result.stderr).toContain('teams[0] (id 1): name is not well-formed Unicode (it has a lone surrogate)');
    expect(result.stderr).toContain('teams[1] (id 2): name contains a control character');
    expect(result.stderr).toContain('teams[2] (id 3): name contains a control character');
  });
});

describe('a failed import activates nothing', () => {
  it('leaves every team whole with its own members and no new token valid; a rerun completes', async () => {
    await importDocument(table, startingSnapshot());
    const next = snapshot({
      teams: [team(1, 'acme'), team(2, 'globex')],
      users: [user(10, [1]), user(12, [1, 2])],
      tokens: [token(12, 'new-user-secret')],
      projects: [...projects(1, 4, 500), ...projects(2, 1, 600)],
    });
    // Fails after the first team switched: the second keeps its old state and old members.
    let switched = 0;
    const failed = importDocument(table, next, {
      onProgress: (p) => {
        if (p.phase === 'switching' && ++switched === 1) throw new Error('failed after one switch');
      },
    });
    await expect(failed).rejects.toThrow('failed after one switch');
    // A token a write creates is written once, whole and valid, after the last switch: not at all yet.
    expect(await projectIds('new-user-secret', 'acme')).toBeNull();
    expect(await projectIds('new-user-secret', 'globex')).toBeNull();
    const newToken = hashToken('new-user-secret');
    expect((await scanAll(table)).filter((item) => JSON.stringify(item).includes(newToken))).toEqual([]);
    const acme = await projectIds('ada-secret', 'acme');
    const globex = await projectIds('ada-secret', 'globex');
    // Each team whole: old (with Ada and Bob) or new (with Ada and user 12), never mixed.
    expect([
      [100_001, 100_002, 100_003],
      [500, 501, 502, 503],
    ]).toContainEqual(acme);
    expect(globex).toEqual([200_001, 200_002]); // globex did not switch: Ada is still its member
    expect(await projectIds('bob-secret', 'acme')).toEqual(acme?.[0] === 500 ? null : acme);

    await importDocument(table, next);
    expect(await projectIds('new-user-secret', 'acme')).toEqual([500, 501, 502, 503]);
    expect(await projectIds('new-user-secret', 'globex')).toEqual([600]);
    expect(await projectIds('ada-secret', 'globex')).toBeNull();
    expect(await projectIds('bob-secret', 'acme')).toBeNull();
  });
});

describe('members are exactly as the snapshot says', () => {
  it('takes a replaced team away from a user who no longer lists it, and from a user absent from the snapshot', async () => {
    await importDocument(table, startingSnapshot());
    await importDocument(
      table,
      snapshot({ teams: [team(1, 'acme')], users: [user(12, [1])], tokens: [token(12, 'carol-secret')] }),
    );
    expect(await projectIds('ada-secret', 'acme')).toBeNull();
    expect(await projectIds('bob-secret', 'acme')).toBeNull();
    expect(await projectIds('carol-secret', 'acme')).toEqual([]);
    expect(await projectIds('ada-secret', 'globex')).toEqual([200_001, 200_002]); // not replaced: unchanged
  });

  it('gives a token created with `token create` the memberships of its user', async () => {
    const { createToken } = await import('../../commands/tokens/tokens.ts');
    await importDocument(table, startingSnapshot());
    const secret = await createToken(table.doc, table.tableName, {
      userId: 11,
      abilities: ['*'],
      name: 'new',
      expiresAt: null,
    });
    expect(await projectIds(secret, 'acme')).toEqual([100_001, 100_002, 100_003]);
    expect(await projectIds(secret, 'globex')).toBeNull();
  });
});

describe('a short, safe report of what is wrong', () => {
  it('lists at most 50 of 30,000 problems, then how many more', async () => {
    const document = {
      teams: [team(1, 'acme')],
      environments: Array.from({ length: 30_000 }, (_, i) => environment(i + 1, 99)),
    };
    const result = await importFile(document);
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1 + 50 + 1);
    expect(lines[0]).toContain('is not a valid snapshot; nothing was imported. 30,000 problems:');
    expect(lines[1]).toBe('  environments[0] (id 1): team_id 99 is not a team of the snapshot');
    expect(lines.at(-1)).toBe('  … and 29,950 more problems');
  });

  it('names the line and column of a JSON syntax error and echoes nothing of the file', async () => {
    const result = await importFile('{\n  "teams": [\n    {"id": 1, "slug": "s3cr3t-v4lue" "name": "x"}\n  ]\n}', {
      raw: true,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/the file is not valid JSON: syntax error at line 3, column \d+/);
    expect(result.stderr).not.toContain('s3cr3t');
    expect(result.stderr).not.toContain('name');
  });

  it('escapes what it echoes of the data', async () => {
    const result = await importFile({ teams: [{ id: 1, slug: 'acme', name: 'Acme', '\u001b[31mred': 1 }] });
    expect(result.stderr).toContain('unknown field "\\x1b[31mred"');
    expect(result.stderr).not.toContain('\u001b');
  });
});

describe('tokens', () => {
  it('refuses a snapshot token that belongs to another user in the table, before writing', async () => {
    await importDocument(table, startingSnapshot());
    const image = await tableImage();
    const result = await importFile({ users: [user(12, [])], tokens: [token(12, 'ada-secret')] });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'tokens[0]: this token already exists for user 10; a token cannot move to another user',
    );
    expect(await tableImage()).toEqual(image);
  });
});
