import { listFingerprint, textFingerprint } from '../../shared/write/fingerprint.ts';
import { itemHash } from '../../shared/write/desired.ts';
import { writeFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { checkRecord, LIMITS } from '../../shared/domain/records.ts';
import { validateSnapshotFile, type SnapshotTeam, type ValidSnapshot } from '../../commands/import/validation.ts';
import { snapshotFile, validateDocument } from '../support/validate.ts';
import { hashToken } from '../../shared/api/bearer.ts';
import { daemons, environment, server, team, token, user } from '../support/snapshots.ts';

// Small factories for the records the shared ones do not cover.
const client = (id: number, teamId: number) => ({ id, team_id: teamId, name: `Client ${id}` });
const project = (id: number, teamId: number, extra: Record<string, unknown> = {}) => ({
  id,
  team_id: teamId,
  client_id: null,
  name: `Project ${id}`,
  slug: `project-${id}`,
  created_at: '2026-01-02T05:04:05+02:00',
  ...extra,
});
const daemon = (id: number, environmentId: number, serverId: number) => daemons(environmentId, serverId, 1, id)[0]!;
const team1 = () => team(1);
const cost = (teamId: number, label: string, amount: string | number, currency = 'EUR') => ({
  team_id: teamId,
  label,
  amount,
  currency,
});

/** The snapshot of docs/contract.md, section 7, verbatim. */
const CONTRACT_EXAMPLE = {
  teams: [{ id: 1, slug: 'acme', name: 'Acme' }],
  users: [{ id: 10, name: 'Ada', teams: [1] }],
  tokens: [
    {
      user_id: 10,
      token: 'plain-text-secret',
      name: 'ci',
      abilities: ['projects:read'],
      expires_at: '2027-01-01T00:00:00+00:00',
    },
    {
      id: 5,
      user_id: 10,
      name: 'rocket',
      token_sha256: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
      abilities: ['*'],
    },
  ],
  environments: [{ id: 5, team_id: 1, name: 'production' }],
  servers: [{ id: 7, team_id: 1, name: 'web-1', monthly_cost: '24.15', currency: 'EUR' }],
  clients: [{ id: 3, team_id: 1, name: 'Client A' }],
  projects: [
    { id: 100, team_id: 1, client_id: 3, name: 'Site', slug: 'site', created_at: '2026-01-02T05:04:05+02:00' },
  ],
  daemons: [
    {
      id: 1,
      environment_id: 5,
      server_id: 7,
      name: 'queue',
      command: 'php artisan queue:work',
      username: 'forge',
      directory: '/home/forge/site',
      processes: 2,
    },
  ],
  costs: [{ team_id: 1, label: 'Backups', amount: '5.00', currency: 'EUR' }],
};

async function valid(document: unknown): Promise<ValidSnapshot> {
  const result = await validateDocument(document);
  if (!result.ok) throw new Error(`expected a valid snapshot, got:\n${result.problems.join('\n')}`);
  return result.snapshot;
}

async function teamOf(document: unknown, teamId: number): Promise<SnapshotTeam> {
  const team = (await valid(document)).teams.find((t) => t.id === teamId);
  if (!team) throw new Error(`no team ${teamId}`);
  return team;
}

async function problems(document: unknown): Promise<string[]> {
  const result = await validateDocument(document);
  if (result.ok) throw new Error('expected the snapshot to be rejected');
  return result.problems;
}

const isValid = async (document: unknown) => (await validateDocument(document)).ok;
const ids = (list: Float64Array) => [...list];

describe('pass 1: valid snapshots', () => {
  it('accepts an empty object: every collection is optional', async () => {
    expect(await valid({})).toMatchObject({ teams: [], users: [], tokens: [], items: 0 });
  });

  it('accepts the contract’s example', async () => {
    expect(await isValid(CONTRACT_EXAMPLE)).toBe(true);
  });

  it('keeps of the contract’s example team its ids, sums, fingerprints and members, not its records', async () => {
    const FINANCE_JSON =
      '"data":[{"label":"Backups","amount":5,"currency":"EUR"},{"label":"Servers","amount":24.15,"currency":"EUR"}],' +
      '"totals":{"EUR":29.15},"grand_total":29.15,"results":2';
    const PROJECT = '{"id":100,"name":"Site","slug":"site","client_id":3,"created_at":"2026-01-02T03:04:05+00:00"}';
    const DAEMON =
      '{"id":1,"name":"queue","command":"php artisan queue:work","username":"forge","directory":"/home/forge/site",' +
      '"processes":2,"environment_id":5,"server_id":7}';
    const team = await teamOf(CONTRACT_EXAMPLE, 1);
    expect({
      ...team,
      projectIds: ids(team.projectIds),
      daemonIds: ids(team.daemonIds),
      projectHashes: [...team.projectHashes],
      daemonHashes: [...team.daemonHashes],
    }).toEqual({
      index: 0,
      id: 1,
      slug: 'acme',
      name: 'Acme',
      projectIds: [100],
      daemonIds: [1],
      // Each item's hash as served, in id order: what a later import compares item by item.
      projectHashes: [itemHash(PROJECT)],
      daemonHashes: [itemHash(DAEMON)],
      finance: {
        lineItems: [
          { label: 'Backups', currency: 'EUR', units: 50_000n },
          { label: 'Servers', currency: 'EUR', units: 241_500n },
        ],
        totals: [{ currency: 'EUR', units: 291_500n }],
        grandTotal: 291_500n,
      },
      // Fingerprinted as served: the time in UTC, fields in the contract's order.
      projectsFingerprint: listFingerprint([PROJECT]),
      daemonsFingerprint: listFingerprint([DAEMON]),
      financeJson: FINANCE_JSON,
      financeFingerprint: textFingerprint(FINANCE_JSON),
      memberIds: [10],
    });
  });

  it('keeps the contract’s example users, and its tokens as hashes only', async () => {
    const { users, tokens } = await valid(CONTRACT_EXAMPLE);
    expect(users).toEqual([{ id: 10, name: 'Ada', teams: [1] }]);
    expect(tokens).toEqual([
      {
        index: 0,
        userId: 10,
        hash: hashToken('plain-text-secret'),
        name: 'ci',
        abilities: ['projects:read'],
        expiresAt: '2027-01-01T00:00:00+00:00',
        plain: true,
      },
      {
        index: 1,
        userId: 10,
        hash: hashToken('test'),
        sanctumId: 5,
        name: 'rocket',
        abilities: ['*'],
        expiresAt: null,
        plain: false,
      },
    ]);
  });

  it('accepts a team with nothing in it', async () => {
    const team = await teamOf({ teams: [team1()] }, 1);
    expect([ids(team.projectIds), ids(team.daemonIds), team.memberIds, team.finance]).toEqual([
      [],
      [],
      [],
      { lineItems: [], totals: [], grandTotal: 0n },
    ]);
  });

  it('orders a team’s project ids (a project’s ordinal is its place among them)', async () => {
    const team = await teamOf({ teams: [team1()], projects: [project(30, 1), project(4, 1), project(200, 1)] }, 1);
    expect(ids(team.projectIds)).toEqual([4, 30, 200]);
  });

  it('orders a team’s daemon ids', async () => {
    const team = await teamOf(
      {
        teams: [team1()],
        environments: [environment(5, 1)],
        servers: [server(7, 1)],
        daemons: [daemon(9, 5, 7), daemon(2, 5, 7), daemon(40, 5, 7)],
      },
      1,
    );
    expect(ids(team.daemonIds)).toEqual([2, 9, 40]);
  });

  it('gives each team only its own projects', async () => {
    const document = { teams: [team1(), team(2)], projects: [project(1, 1), project(2, 2), project(3, 1)] };
    expect(ids((await teamOf(document, 1)).projectIds)).toEqual([1, 3]);
    expect(ids((await teamOf(document, 2)).projectIds)).toEqual([2]);
  });

  it('gives a daemon to the team of its environment, even when its server belongs to another team', async () => {
    const document = {
      teams: [team1(), team(2)],
      environments: [environment(5, 1)],
      servers: [server(7, 2)],
      daemons: [daemon(1, 5, 7)],
    };
    expect(ids((await teamOf(document, 1)).daemonIds)).toEqual([1]);
    expect(ids((await teamOf(document, 2)).daemonIds)).toEqual([]);
  });

  it('gives a daemon to its environment’s team when the daemons come before the environments in the file', async () => {
    const document = {
      daemons: [daemon(1, 5, 7)],
      servers: [server(7, 1)],
      environments: [environment(5, 1)],
      teams: [team1()],
    };
    expect(ids((await teamOf(document, 1)).daemonIds)).toEqual([1]);
  });

  it('normalises created_at to UTC whole seconds', () => {
    const checked = checkRecord('projects', project(1, 1, { created_at: '2025-12-31T22:30:00.987-05:00' }));
    expect(checked.ok && checked.record.created_at).toBe('2026-01-01T03:30:00+00:00');
  });

  it('accepts a project without a client_id as client_id null', async () => {
    const { client_id: _, ...withoutClient } = project(1, 1);
    const checked = checkRecord('projects', withoutClient);
    expect(checked.ok && checked.record.client_id).toBeNull();
    expect(await isValid({ teams: [team1()], projects: [withoutClient] })).toBe(true);
  });

  it('accepts a project of a client of its own team', async () => {
    expect(
      await isValid({ teams: [team1()], clients: [client(3, 1)], projects: [project(1, 1, { client_id: 3 })] }),
    ).toBe(true);
  });

  it('makes the users who list a team its members, each once', async () => {
    const document = { teams: [team1(), team(2)], users: [user(10, [1, 1]), user(11, [2]), user(12, [1, 2])] };
    expect((await teamOf(document, 1)).memberIds).toEqual([10, 12]);
    expect((await teamOf(document, 2)).memberIds).toEqual([11, 12]);
  });

  it('counts a team listed twice by a user once in the user’s teams', async () => {
    expect((await valid({ teams: [team1()], users: [user(10, [1, 1])] })).users).toEqual([
      { id: 10, name: 'User 10', teams: [1] },
    ]);
  });

  it('counts servers under "Servers" and joins a cost labelled "Servers" to them', async () => {
    const document = {
      teams: [team1()],
      servers: [server(7, 1, '24.15'), server(8, 1, 10, 'USD')],
      costs: [cost(1, 'Servers', '0.85'), cost(1, 'Backups', 5)],
    };
    expect((await teamOf(document, 1)).finance.lineItems).toEqual([
      { label: 'Backups', currency: 'EUR', units: 50_000n },
      { label: 'Servers', currency: 'EUR', units: 250_000n },
      { label: 'Servers', currency: 'USD', units: 100_000n },
    ]);
  });

  it('accepts amounts as JSON numbers', async () => {
    expect((await teamOf({ teams: [team1()], servers: [server(7, 1, 24.15)] }, 1)).finance.grandTotal).toBe(241_500n);
  });

  it('accepts an amount of zero', async () => {
    expect(await isValid({ teams: [team1()], costs: [cost(1, 'Free', '0')] })).toBe(true);
  });

  it('keeps each team’s costs apart', async () => {
    const document = { teams: [team1(), team(2)], costs: [cost(1, 'A', '1'), cost(2, 'A', '2')] };
    expect((await teamOf(document, 2)).finance.grandTotal).toBe(20_000n);
  });

  it('keeps a token without expires_at as never expiring', async () => {
    expect(
      (await valid({ teams: [team1()], users: [user(10, [1])], tokens: [token(10, 'secret-token')] })).tokens[0]!
        .expiresAt,
    ).toBeNull();
  });

  it('keeps a token with expires_at null as never expiring', async () => {
    const document = { users: [user(10, [])], tokens: [token(10, 'secret-token', ['*'], { expires_at: null })] };
    expect((await valid(document)).tokens[0]!.expiresAt).toBeNull();
  });

  it('normalises a token’s expires_at to UTC', async () => {
    const document = {
      users: [user(10, [])],
      tokens: [token(10, 'secret-token', ['*'], { expires_at: '2027-01-01T02:00:00+02:00' })],
    };
    expect((await valid(document)).tokens[0]!.expiresAt).toBe('2027-01-01T00:00:00+00:00');
  });

  it.each(['finances:read', 'daemons:read', 'projects:read', '*'])('accepts the ability %s', async (ability) => {
    expect(await isValid({ users: [user(10, [])], tokens: [token(10, 'secret-token', [ability])] })).toBe(true);
  });
});

describe('pass 1: a file that is not UTF-8', () => {
  /**
   * `{"teams":[` and spaces, so that `bad` starts at file offset `at`, then a valid record. The
   * file is read in 64 KiB chunks: the offsets below fall in the first chunk, deep in the file,
   * and across a chunk's boundary.
   */
  async function fileWith(bad: Buffer, at: number, after = Buffer.from('')): Promise<string> {
    const head = Buffer.from('{"teams":[');
    const path = await snapshotFile('');
    await writeFile(
      path,
      Buffer.concat([
        head,
        Buffer.alloc(at - head.length, 0x20),
        bad,
        after,
        Buffer.from(' {"id":1,"slug":"acme","name":"Acme"}]}'),
      ]),
    );
    return path;
  }
  const problemsOf = async (path: string) => {
    const result = await validateSnapshotFile(path);
    return result.ok ? [] : result.problems;
  };
  const notUtf8 = (offset: number) => [
    `the file is not UTF-8 text: an invalid byte sequence at byte ${offset.toLocaleString('en')} (counted from 0)`,
  ];

  it.each([50_020, 200_000, 1_000_003])(
    'names the offset of an invalid byte at %i, not where its chunk starts',
    async (at) => {
      expect(await problemsOf(await fileWith(Buffer.from([0xff]), at))).toEqual(notUtf8(at));
    },
  );

  it('finds a bad byte after a character split across two chunks, and does not flag the character', async () => {
    // "€" is E2 82 AC: its first byte ends the first 64 KiB chunk.
    expect(
      await problemsOf(
        await fileWith(Buffer.from('€', 'utf8'), 65_535, Buffer.concat([Buffer.alloc(100, 0x20), Buffer.from([0xc0])])),
      ),
    ).toEqual(notUtf8(65_535 + 3 + 100));
  });

  it('names where a character broken by the next byte begins, at the end of a chunk or inside one', async () => {
    expect(await problemsOf(await fileWith(Buffer.from([0xe2, 0x41]), 65_535))).toEqual(notUtf8(65_535));
    expect(await problemsOf(await fileWith(Buffer.from([0xf0, 0x9f, 0x41]), 200_095))).toEqual(notUtf8(200_095));
  });

  it('names where an unfinished character at the end of the file begins', async () => {
    const path = await snapshotFile('');
    const text = Buffer.from(`{"teams":[]}${' '.repeat(70_000)}`);
    await writeFile(path, Buffer.concat([text, Buffer.from([0xe2, 0x82])]));
    expect(await problemsOf(path)).toEqual(notUtf8(text.length));
  });
});

describe('pass 1: invalid snapshots', () => {
  it.each([
    ['null', null],
    ['an array', [CONTRACT_EXAMPLE]],
    ['a string', '{}'],
    ['a number', 1],
  ])('rejects a document that is %s as not a JSON object', async (_, document) => {
    expect(await problems(document)).toEqual(['the snapshot must be a JSON object']);
  });

  it('quotes a key it echoes escaped as every command escapes data: controls as \\x1b, invisible characters as \\u200b, quotes as \\"', async () => {
    expect(await problems({ 'te\u001b[2J\u200bams"': [] })).toEqual([
      'unknown collection "te\\x1b[2J\\u200bams\\"" (did you mean "teams"?)',
    ]);
  });

  it('rejects a collection that is not an array', async () => {
    expect(await problems({ teams: { id: 1 } })).toEqual(['teams: must be an array']);
  });

  it('rejects a record that is not an object, naming collection and index', async () => {
    expect(await problems({ teams: [team(1), 'team-2'] })).toEqual(['teams[1]: must be an object']);
  });

  it('names the collection, the index, the id and the field: the contract’s own example', async () => {
    const document = {
      teams: [team(1)],
      projects: [
        project(1, 1),
        project(2, 1),
        project(3, 1),
        project(4, 1),
        project(5, 1),
        project(1234, 1, { created_at: '2026-02-30T00:00:00Z' }),
      ],
    };
    expect(await problems(document)).toEqual(['projects[5] (id 1234): created_at is not an ISO 8601 time']);
  });

  it('rejects a created_at without an offset', async () => {
    expect(
      await problems({ teams: [team(1)], projects: [project(1, 1, { created_at: '2026-01-02T05:04:05' })] }),
    ).toEqual(['projects[0] (id 1): created_at is not an ISO 8601 time']);
  });

  it('rejects a token’s expires_at that is not a time', async () => {
    const document = { users: [user(10, [])], tokens: [token(10, 'secret-token', ['*'], { expires_at: 'next year' })] };
    expect(await problems(document)).toEqual(['tokens[0]: expires_at is not an ISO 8601 time']);
  });

  it('reports a missing field by name', async () => {
    const { created_at: _, ...withoutTime } = project(1, 1);
    expect(await problems({ teams: [team(1)], projects: [withoutTime] })).toEqual([
      'projects[0] (id 1): created_at is missing',
    ]);
  });

  it('reports a missing id without an id in the location', async () => {
    expect(await problems({ teams: [{ slug: 'acme', name: 'Acme' }] })).toEqual(['teams[0]: id is missing']);
  });

  it('reports every missing field of a record', async () => {
    expect(await problems({ environments: [{}] })).toEqual([
      'environments[0]: id is missing',
      'environments[0]: team_id is missing',
      'environments[0]: name is missing',
    ]);
  });

  it.each([
    ['zero', 0],
    ['negative', -1],
    ['a fraction', 1.5],
    ['a string', '1'],
  ])('rejects an id that is %s', async (_, id) => {
    expect(await problems({ teams: [{ id, slug: 'acme', name: 'Acme' }] })).toEqual([
      expect.stringMatching(/^teams\[0\] \(id [^)]+\): id must be a positive integer$/),
    ]);
  });

  it('rejects an id beyond 2^53 - 1, named as written', async () => {
    expect(await problems({ teams: [{ id: 2 ** 53, slug: 'acme', name: 'Acme' }] })).toEqual([
      'teams[0] (id 9007199254740992): id must be at most 9007199254740991',
    ]);
  });

  it('rejects a reference that is not a positive integer', async () => {
    expect(await problems({ teams: [team(1)], users: [user(10, [1, 0])] })).toEqual([
      'users[0] (id 10): teams[1] must be a positive integer',
    ]);
  });

  it('rejects negative processes', async () => {
    const document = {
      teams: [team(1)],
      environments: [environment(5, 1)],
      servers: [server(7, 1)],
      daemons: [{ ...daemon(1, 5, 7), processes: -1 }],
    };
    expect(await problems(document)).toEqual([expect.stringMatching(/^daemons\[0\] \(id 1\): processes /)]);
  });

  describe('duplicates', () => {
    const base = {
      teams: [team(1)],
      users: [user(10, [1])],
      environments: [environment(5, 1)],
      servers: [server(7, 1)],
      clients: [client(3, 1)],
      projects: [project(100, 1)],
      daemons: [daemon(1, 5, 7)],
    };
    const duplicates: [keyof typeof base, unknown, number][] = [
      ['teams', team(1, 'other'), 1],
      ['users', user(10, [1]), 10],
      ['environments', environment(5, 1, 'staging'), 5],
      ['servers', server(7, 1), 7],
      ['clients', client(3, 1), 3],
      ['projects', project(100, 1), 100],
      ['daemons', daemon(1, 5, 7), 1],
    ];
    it.each(duplicates)('rejects a duplicate id in %s', async (collection, record, id) => {
      const document = { ...base, [collection]: [...base[collection], record] };
      expect(await problems(document)).toEqual([
        expect.stringMatching(new RegExp(`^${collection}\\[1\\] \\(id ${id}\\): id .*duplicate`)),
      ]);
    });

    it('accepts the same id in two different collections', async () => {
      expect(await isValid({ ...base, clients: [client(1, 1)], projects: [project(1, 1)] })).toBe(true);
    });

    it('rejects a duplicate team slug', async () => {
      expect(await problems({ teams: [team(1, 'acme'), team(2, 'acme')] })).toEqual([
        expect.stringMatching(/^teams\[1\] \(id 2\): slug .*duplicate/),
      ]);
    });

    it('rejects a duplicate token secret', async () => {
      const document = {
        users: [user(10, []), user(11, [])],
        tokens: [token(10, 'same-secret'), token(11, 'same-secret')],
      };
      expect(await problems(document)).toEqual([expect.stringMatching(/^tokens\[1\]: token .*duplicate/)]);
    });
  });

  it('rejects an all-digit team slug', async () => {
    expect(await problems({ teams: [team(1, '2024')] })).toEqual([
      expect.stringMatching(/^teams\[0\] \(id 1\): slug must not be all digits/),
    ]);
  });

  it('accepts a team slug with digits and letters', async () => {
    expect(await isValid({ teams: [team(1, '2024-acme')] })).toBe(true);
  });

  it('rejects an empty team slug', async () => {
    expect(await problems({ teams: [team(1, '')] })).toEqual([expect.stringMatching(/^teams\[0\] \(id 1\): slug /)]);
  });

  it('rejects an unknown ability, naming its index', async () => {
    const document = {
      users: [user(10, [])],
      tokens: [token(10, 'secret-token', ['projects:read', 'projects:write'])],
    };
    expect(await problems(document)).toEqual([expect.stringMatching(/^tokens\[0\]: abilities\[1\] /)]);
  });

  it('rejects abilities that are not a list', async () => {
    expect(await problems({ users: [user(10, [])], tokens: [token(10, 'secret-token', '*' as never)] })).toEqual([
      expect.stringMatching(/^tokens\[0\]: abilities /),
    ]);
  });

  it.each(['eur', 'EURO', 'EU', 'E1R', ''])('rejects the currency %j of a server', async (currency) => {
    expect(await problems({ teams: [team(1)], servers: [server(7, 1, '1', currency)] })).toEqual([
      'servers[0] (id 7): currency is not a currency code of 3 capital letters',
    ]);
  });

  it('rejects a currency that is not 3 capital letters on a cost', async () => {
    expect(await problems({ teams: [team(1)], costs: [cost(1, 'Backups', '1', 'usd')] })).toEqual([
      'costs[0]: currency is not a currency code of 3 capital letters',
    ]);
  });

  it('rejects a negative monthly_cost', async () => {
    expect(await problems({ teams: [team(1)], servers: [server(7, 1, '-24.15')] })).toEqual([
      'servers[0] (id 7): monthly_cost must not be negative',
    ]);
  });

  it('rejects a negative amount given as a number', async () => {
    expect(await problems({ teams: [team(1)], costs: [cost(1, 'Refund', -5)] })).toEqual([
      'costs[0]: amount must not be negative',
    ]);
  });

  it('rejects an amount with more than 4 decimals', async () => {
    expect(await problems({ teams: [team(1)], costs: [cost(1, 'Backups', '0.00001')] })).toEqual([
      'costs[0]: amount has more than 4 decimals',
    ]);
  });

  it('rejects an amount that is not a decimal', async () => {
    expect(await problems({ teams: [team(1)], servers: [server(7, 1, 'ten')] })).toEqual([
      expect.stringMatching(/^servers\[0\] \(id 7\): monthly_cost /),
    ]);
  });

  describe('references', () => {
    it.each([
      ['environments', environment(5, 99)],
      ['servers', server(7, 99)],
      ['clients', client(3, 99)],
      ['projects', project(100, 99)],
    ] as const)('rejects a team_id in %s that is not a team of the snapshot', async (collection, record) => {
      expect(await problems({ teams: [team(1)], [collection]: [record] })).toEqual([
        `${collection}[0] (id ${record.id}): team_id 99 is not a team of the snapshot`,
      ]);
    });

    it('rejects a cost of a team that is not in the snapshot', async () => {
      expect(await problems({ teams: [team(1)], costs: [cost(99, 'Backups', '1')] })).toEqual([
        'costs[0]: team_id 99 is not a team of the snapshot',
      ]);
    });

    it('rejects a user’s team that is not in the snapshot, naming its index', async () => {
      expect(await problems({ teams: [team(1)], users: [user(10, [1, 99])] })).toEqual([
        expect.stringMatching(/^users\[0\] \(id 10\): teams\[1\] 99 /),
      ]);
    });

    it('rejects a token of a user who is not in the snapshot', async () => {
      expect(await problems({ users: [user(10, [])], tokens: [token(11, 'secret-token')] })).toEqual([
        expect.stringMatching(/^tokens\[0\]: user_id 11 /),
      ]);
    });

    it('rejects a project of a client that is not in the snapshot', async () => {
      expect(await problems({ teams: [team(1)], projects: [project(100, 1, { client_id: 3 })] })).toEqual([
        expect.stringMatching(/^projects\[0\] \(id 100\): client_id 3 /),
      ]);
    });

    it('rejects a project of a client of another team', async () => {
      const document = {
        teams: [team(1), team(2)],
        clients: [client(3, 2)],
        projects: [project(100, 1, { client_id: 3 })],
      };
      expect(await problems(document)).toEqual([
        expect.stringMatching(/^projects\[0\] \(id 100\): client_id 3 belongs to team 2/),
      ]);
    });

    it('rejects a daemon whose environment is not in the snapshot', async () => {
      const document = { teams: [team(1)], servers: [server(7, 1)], daemons: [daemon(1, 5, 7)] };
      expect(await problems(document)).toEqual([expect.stringMatching(/^daemons\[0\] \(id 1\): environment_id 5 /)]);
    });

    it('rejects a daemon whose server is not in the snapshot', async () => {
      const document = { teams: [team(1)], environments: [environment(5, 1)], daemons: [daemon(1, 5, 7)] };
      expect(await problems(document)).toEqual([expect.stringMatching(/^daemons\[0\] \(id 1\): server_id 7 /)]);
    });
  });

  // Labels of 3-byte UTF-8 characters are within the character limit but not DynamoDB's bytes.
  const labels = (count: number, character: string) =>
    Array.from({ length: count }, (_, i) =>
      cost(1, `${String(i).padStart(4, '0')}${character.repeat(LIMITS.name - 4)}`, '1'),
    );

  it('rejects a team whose finance summary would exceed DynamoDB’s 400 KB item, counted in bytes', async () => {
    expect(await problems({ teams: [team(1)], costs: labels(600, '€') })).toEqual([
      expect.stringMatching(
        /^teams\[0\] \(id 1\): its finance summary would be 4\d\d,\d\d\d bytes in DynamoDB, more than the 409,600 an item may hold$/,
      ),
    ]);
  });

  it('accepts as many labels of the same length in 1-byte characters', async () => {
    expect(await isValid({ teams: [team(1)], costs: labels(600, 'e') })).toBe(true);
  });

  describe('several problems', () => {
    it('reports every malformed record, in document order', async () => {
      const document = {
        teams: [team(1, '42')],
        servers: [server(7, 1, '-1')],
        projects: [project(100, 1, { created_at: 'soon' })],
      };
      expect(await problems(document)).toEqual([
        expect.stringMatching(/^teams\[0\] \(id 1\): slug /),
        'servers[0] (id 7): monthly_cost must not be negative',
        'projects[0] (id 100): created_at is not an ISO 8601 time',
      ]);
    });

    it('reports every unresolved reference', async () => {
      const document = {
        teams: [team(1)],
        users: [user(10, [98])],
        projects: [project(100, 99)],
        daemons: [daemon(1, 5, 7)],
      };
      expect(await problems(document)).toEqual([
        expect.stringMatching(/^users\[0\] \(id 10\): teams\[0\] 98 /),
        expect.stringMatching(/^projects\[0\] \(id 100\): team_id 99 /),
        expect.stringMatching(/^daemons\[0\] \(id 1\): environment_id 5 /),
        expect.stringMatching(/^daemons\[0\] \(id 1\): server_id 7 /),
      ]);
    });

    it('reports several problems of one record', async () => {
      expect(await problems({ teams: [team(1)], servers: [server(7, 1, '-1', 'eur')] })).toEqual([
        'servers[0] (id 7): monthly_cost must not be negative',
        'servers[0] (id 7): currency is not a currency code of 3 capital letters',
      ]);
    });
  });
});

describe('pass 1: what only the text shows (the token walker)', () => {
  const teamText = '{"id":1,"slug":"acme","name":"Acme"}';
  it.each([
    [
      'a duplicate collection',
      `{"teams":[],"teams":[]}`,
      ['the snapshot: the key "teams" appears twice in one object'],
    ],
    [
      'a duplicate key inside a record’s field value',
      `{"teams":[{"id":1,"slug":"acme","name":{"a":1,"a":2}}]}`,
      ['teams[0] (id 1): the key "a" appears twice in one object', 'teams[0] (id 1): name must be a string'],
    ],
    [
      'a duplicate key inside an unknown collection',
      `{"temas":{"a":1,"a":2}}`,
      ['unknown collection "temas" (did you mean "teams"?)', 'the snapshot: the key "a" appears twice in one object'],
    ],
    [
      'a duplicate key inside a collection that is not an array',
      `{"teams":{"a":1,"a":2}}`,
      ['teams: must be an array', 'teams: the key "a" appears twice in one object'],
    ],
    [
      'a duplicate key inside a record that is an array',
      `{"teams":[[{"a":1,"a":2}],${teamText}]}`,
      ['teams[0]: must be an object', 'teams: the key "a" appears twice in one object'],
    ],
    ['a collection that is a number', `{"teams":5}`, ['teams: must be an array']],
    [
      'an unknown field whose value is an array',
      `{"teams":[{"id":1,"slug":"acme","name":"Acme","nmae":[1,{"b":2}]}]}`,
      ['teams[0] (id 1): unknown field "nmae" (did you mean "name"?)'],
    ],
    [
      'objects and arrays in an array field',
      `{"teams":[${teamText}],"users":[{"id":10,"teams":[1,{"x":1},[2]]}]}`,
      [
        'users[0] (id 10): teams[1] must be a positive integer',
        'users[0] (id 10): teams[2] must be a positive integer',
      ],
    ],
    [
      'an array where a scalar field belongs',
      `{"teams":[{"id":[1],"slug":"acme","name":"Acme"}]}`,
      ['teams[0]: id must be a positive integer'],
    ],
    [
      'records after one that is not an object keep their index',
      `{"teams":[1,[],${teamText},{"id":2}]}`,
      [
        'teams[0]: must be an object',
        'teams[1]: must be an object',
        // A team may have no slug (Jetstream's teams have none): it is addressed by its id alone.
        'teams[3] (id 2): name is missing',
      ],
    ],
  ])('reports %s', async (_, text, expected) => {
    const result = await validateDocument(text, { raw: true });
    expect(result.ok ? [] : result.problems).toEqual(expected);
  });

  it('keeps 1,001 elements of an array field, enough for the 1,000 teams rule to fail', async () => {
    const teams = Array.from({ length: 5_000 }, (_, i) => i + 1);
    expect(await problems({ users: [user(10, teams)] })).toEqual([
      'users[0] (id 10): teams must list at most 1,000 teams',
    ]);
  });
});

describe('reporting every problem in one pass', async () => {
  it('reports a broken reference even when another record is malformed', async () => {
    const result = await validateDocument({
      teams: [team(1, 'acme')],
      environments: [{ id: 5, team_id: 99, name: 'production' }],
      projects: [{ id: 100, team_id: 1, client_id: null, name: 'Site', slug: 'site', created_at: 'soon' }],
    });
    expect(result).toEqual({
      ok: false,
      count: 2,
      problems: [
        'projects[0] (id 100): created_at is not an ISO 8601 time',
        'environments[0] (id 5): team_id 99 is not a team of the snapshot',
      ],
    });
  });

  it('does not report a reference to a malformed record as unresolved a second time', async () => {
    const result = await validateDocument({
      teams: [{ id: 1, slug: '42', name: 'Digits' }],
      environments: [{ id: 5, team_id: 1, name: 'production' }],
    });
    expect(result).toEqual({
      ok: false,
      count: 1,
      problems: ['teams[0] (id 1): slug must not be all digits (an all-digit segment is a team id)'],
    });
  });

  it('does not report a reference to a record with an unknown key as unresolved either', async () => {
    const result = await validateDocument({
      teams: [{ id: 1, slug: 'acme', name: 'Acme', x: {} }],
      users: [{ id: 10, name: 'Ada', teams: [1], tema: 1 }],
      environments: [{ id: 5, team_id: 1, name: 'production' }],
      servers: [{ id: 7, team_id: 1, name: 'web-1', monthly_cost: '1', currency: 'EUR' }],
      tokens: [{ user_id: 10, token: 'secret-token', abilities: ['*'] }],
    });
    expect(result.ok).toBe(false);
    expect(result.ok ? [] : result.problems).toEqual([
      expect.stringMatching(/^teams\[0\] \(id 1\): unknown field "x"/),
      expect.stringMatching(/^users\[0\] \(id 10\): unknown field "tema"/),
    ]);
  });
});
