import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { createDynamoDbClient } from '../../shared/table/dynamodb-client.ts';
import { userKey } from '../../shared/table/keys.ts';
import { getItems } from '../../shared/write/reads.ts';
import { freshTable, type TestTable } from '../support/dynamodb.ts';
import { createSourceDatabase, describeSources, type SourceDatabase } from '../support/source-databases.ts';
import { seedSource, type SourceSnapshot } from '../support/source-seed.ts';
import { type RunningSync, servedWithin, settledBy, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * A second attack on the sync (docs/contract.md, section 9; docs/sync.md), on what the first one's
 * fixes touched: one plan per batch (applyTogether), slugs handed over and swapped, members leaving
 * before joining, plans split at 100 teams. Each case is named after the behaviour the contract
 * promises.
 */
const ADA = 'again-ada-token-000001';
const UMA = 'again-uma-token-000002';
const FAY = 'again-fay-token-000003';
const GUS = 'again-gus-token-000004';
const DAVE = 'again-dave-token-00005';
const IVY = 'again-ivy-token-000006';
const KIM = 'again-kim-token-000007';
const LEA = 'again-lea-token-000008';

/** The table through a client whose every call first passes `at(operation, input)` (which may wait). */
function hookedTable(table: TestTable, at: (operation: string, input: any) => void | Promise<void>): TestTable {
  const client = createDynamoDbClient({ endpoint: table.endpoint, maxAttempts: 5, requestTimeoutMs: 30_000 });
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      await at(String(context.commandName).replace(/Command$/, ''), (args as { input: unknown }).input);
      return next(args);
    },
    { step: 'initialize', name: 'attackHook' },
  );
  return { ...table, client, doc } as TestTable;
}

const team = (id: number, slug: string) => ({ id, slug, name: `Team ${id}`, user_id: 10 });

function data(): SourceSnapshot {
  const many = Array.from({ length: 104 }, (_, i) => team(i + 1, `t${i + 1}`));
  const others = [
    team(201, 'snap'),
    team(202, 'snap-home'),
    team(211, 'ha'),
    team(212, 'hb'),
    team(221, 'ca'),
    team(222, 'cb'),
    team(223, 'cc'),
    team(250, 'mt'),
    team(251, 'mt-big'),
    ...Array.from({ length: 10 }, (_, i) => team(231 + i, `w${231 + i}`)),
  ];
  const all = [...many, ...others];
  return {
    teams: all,
    users: [
      { id: 10, name: 'Ada' },
      { id: 20, name: 'Uma', teams: [202] },
      { id: 21, name: 'Vic', teams: [202] },
      { id: 22, name: 'Dave', teams: [104] },
      { id: 23, name: 'Fay', teams: [212] },
      { id: 24, name: 'Gus', teams: [222] },
      { id: 25, name: 'Ivy', teams: [202] },
      { id: 27, name: 'Lea', teams: [202] },
      { id: 26, name: 'Kim', teams: Array.from({ length: 104 }, (_, i) => i + 1) },
    ],
    tokens: [
      { id: 70, user_id: 10, token: ADA, abilities: ['*'] },
      { id: 71, user_id: 20, token: UMA, abilities: ['*'] },
      { id: 72, user_id: 23, token: FAY, abilities: ['*'] },
      { id: 73, user_id: 24, token: GUS, abilities: ['*'] },
      { id: 74, user_id: 22, token: DAVE, abilities: ['projects:read'] },
      { id: 75, user_id: 25, token: IVY, name: 'ivy', abilities: ['*'] },
      { id: 76, user_id: 26, token: KIM, name: 'kim', abilities: ['*'] },
      { id: 77, user_id: 27, token: LEA, name: 'lea', abilities: ['*'] },
    ],
    projects: all.map((t) => ({
      id: t.id,
      team_id: t.id,
      name: `P${t.id}`,
      slug: `p${t.id}`,
      created_at: '2026-01-02T03:04:05Z',
    })),
  };
}

describeSources('a transaction served whole, while the sync reads and at scale', (engine) => {
  let db: SourceDatabase;
  let table: TestTable;
  let api: ReturnType<typeof tableApi>;
  let sync: RunningSync;
  const now = engine === 'postgres' ? 'now()' : 'NOW()';
  const begin = engine === 'postgres' ? 'BEGIN' : 'START TRANSACTION';
  /** What the sync's next DynamoDB call waits for (set by a case, cleared after it). */
  let hook: ((operation: string, input: any) => void | Promise<void>) | undefined;

  const transaction = async (statements: string[]) => {
    const session = await db.session();
    try {
      await session.query(begin);
      for (const statement of statements) await session.query(statement);
      await session.query('COMMIT');
    } finally {
      await session.close();
    }
  };
  const member = (teamId: number, userId: number) =>
    `INSERT INTO team_user (team_id, user_id, role, created_at, updated_at) VALUES (${teamId}, ${userId}, 'editor', ${now}, ${now})`;

  /** Polls `paths` with `token` in rounds until stopped: each round's statuses. */
  const poll = (token: string, paths: string[]) => {
    const rounds: number[][] = [];
    let polling = true;
    const done = (async () => {
      while (polling) {
        const round: number[] = [];
        for (const path of paths) round.push((await api.get(path, { token })).status);
        rounds.push(round);
      }
    })();
    return {
      rounds,
      stop: async () => {
        polling = false;
        await done;
      },
    };
  };
  const tally = (rounds: number[][]) => {
    const counts = new Map<string, number>();
    for (const round of rounds) counts.set(round.join('/'), (counts.get(round.join('/')) ?? 0) + 1);
    return JSON.stringify(Object.fromEntries(counts));
  };

  let settled: () => Promise<void>;

  beforeAll(async () => {
    db = await createSourceDatabase(engine);
    await seedSource(db, data());
    await setUp(db);
    table = await freshTable();
    api = tableApi(table);
    settled = settledBy(db, api, { id: 5, segment: 't5', token: ADA });
    sync = startSync(
      db,
      hookedTable(table, (operation, input) => hook?.(operation, input)),
    );
    await servedWithin(async () => sync.ready, 90_000);
  }, 150_000);
  beforeEach(() => {
    hook = undefined;
  });
  afterAll(async () => {
    hook = undefined;
    await sync?.stop();
    await db?.drop();
  });

  it('answers 401 within 10 s for a token row the rules refuse, and 200 again within 10 s once it is fixed', async () => {
    expect((await api.get('/api/snap-home/projects', { token: IVY })).status).toBe(200);
    await db.query(`UPDATE personal_access_tokens SET name = 'bad\u0001name' WHERE id = 75`);
    await servedWithin(async () => (await api.get('/api/snap-home/projects', { token: IVY })).status === 401);
    await db.query(`UPDATE personal_access_tokens SET name = 'ivy' WHERE id = 75`);
    await servedWithin(async () => (await api.get('/api/snap-home/projects', { token: IVY })).status === 200);
  }, 40_000);

  it('never lets a token read a team with the abilities its own transaction took away, when that transaction commits while the sync reads an earlier change of the team', async () => {
    // Uma ('*') is no member of snap (201). One transaction X makes her a member and narrows her token
    // to projects:read: at no state of the source can she read snap's daemons. X commits just after the
    // sync has read an earlier change of snap's members (Vic joins), before it reads the team.
    expect((await api.get('/api/snap/daemons', { token: UMA })).status).toBe(404);
    let slow = false;
    let armed = true;
    hook = async (operation) => {
      if (armed && operation === 'BatchGetItem') {
        armed = false;
        await transaction([
          member(201, 20),
          `UPDATE personal_access_tokens SET abilities = '["projects:read"]' WHERE id = 71`,
        ]);
        slow = true;
      }
      if (slow) await sleep(100);
    };
    const watch = poll(UMA, ['/api/snap/daemons']);
    try {
      await transaction([member(201, 21), `UPDATE users SET name = 'Vic V' WHERE id = 21`]);
      await servedWithin(async () => (await api.get('/api/snap/daemons', { token: UMA })).status === 403, 30_000);
      await settled(); // the batch that applied it is over, watched all along
    } finally {
      hook = undefined;
      await watch.stop();
    }
    expect(armed, 'the hook never fired').toBe(false);
    expect(
      watch.rounds.filter(([status]) => status === 200).length,
      `statuses seen on snap's daemons: ${tally(watch.rounds)}`,
    ).toBe(0);
  }, 60_000);

  it('never lets a user moved from one team to another read both, when the team she leaves takes the slug the other gives up', async () => {
    // One transaction: team 211 gives up "ha" (to "ha2") and gains Fay; team 212 takes "ha" and loses Fay.
    let slow = false;
    hook = async () => {
      if (slow) await sleep(150);
    };
    expect((await api.get('/api/212/projects', { token: FAY })).status).toBe(200);
    const watch = poll(FAY, ['/api/211/projects', '/api/212/projects']);
    try {
      await servedWithin(async () => watch.rounds.length > 3);
      slow = true;
      await transaction([
        `UPDATE teams SET slug = 'ha2' WHERE id = 211`,
        `UPDATE teams SET slug = 'ha' WHERE id = 212`,
        member(211, 23),
        'DELETE FROM team_user WHERE team_id = 212 AND user_id = 23',
      ]);
      await servedWithin(async () => (await api.get('/api/212/projects', { token: FAY })).status === 404, 30_000);
      // She may lose 212 before she gains 211 (a right taken away first), never the other way.
      await servedWithin(async () => (await api.get('/api/ha2/projects', { token: FAY })).status === 200, 30_000);
    } finally {
      hook = undefined;
      await watch.stop();
    }
    const both = watch.rounds.filter(([a, b]) => a === 200 && b === 200).length;
    expect(both, `rounds (211/212): ${tally(watch.rounds)}`).toBe(0);
  }, 60_000);

  it('never lets a user moved from one team to another read both, when the team she leaves swaps slugs with a third', async () => {
    // One transaction: 221 and 222 swap slugs (through a third); Gus leaves 222 and joins 223.
    let slow = false;
    hook = async () => {
      if (slow) await sleep(150);
    };
    expect((await api.get('/api/222/projects', { token: GUS })).status).toBe(200);
    const watch = poll(GUS, ['/api/223/projects', '/api/222/projects']);
    try {
      await servedWithin(async () => watch.rounds.length > 3);
      slow = true;
      await transaction([
        `UPDATE teams SET slug = 'c-tmp' WHERE id = 221`,
        `UPDATE teams SET slug = 'ca' WHERE id = 222`,
        `UPDATE teams SET slug = 'cb' WHERE id = 221`,
        member(223, 24),
        'DELETE FROM team_user WHERE team_id = 222 AND user_id = 24',
      ]);
      await servedWithin(async () => (await api.get('/api/222/projects', { token: GUS })).status === 404, 30_000);
      await settled(); // the batch that applied it is over, watched all along
    } finally {
      hook = undefined;
      await watch.stop();
    }
    const both = watch.rounds.filter(([a, b]) => a === 200 && b === 200).length;
    expect(both, `rounds (223/222): ${tally(watch.rounds)}`).toBe(0);
  }, 60_000);

  it('never lets a token read a team with the abilities its own transaction took away, when that transaction records more than 20,000 changes', async () => {
    // One transaction X makes Lea ('*') a member of mt and narrows her token to projects:read, with
    // 20,000 projects added to another team in between: at no state of the source can she read mt's daemons.
    expect((await api.get('/api/mt/daemons', { token: LEA })).status).toBe(404);
    const statements = [member(250, 27)];
    for (let start = 0; start < 20_000; start += 1_000) {
      const rows = Array.from(
        { length: 1_000 },
        (_, i) => `(${100_000 + start + i}, 251, 'P ${start + i}', 'p${start + i}', ${now}, ${now})`,
      );
      statements.push(
        `INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES ${rows.join(', ')}`,
      );
    }
    statements.push(`UPDATE personal_access_tokens SET abilities = '["projects:read"]' WHERE id = 77`);
    const watch = poll(LEA, ['/api/mt/daemons']);
    try {
      await transaction(statements);
      await servedWithin(async () => (await api.get('/api/mt/daemons', { token: LEA })).status === 403, 60_000);
      await servedWithin(
        async () => (await api.get('/api/mt-big/projects', { token: ADA })).body?.meta?.total === 20_001,
        60_000,
      );
    } finally {
      await watch.stop();
    }
    expect(
      watch.rounds.filter(([status]) => status === 200).length,
      `statuses seen on mt's daemons: ${tally(watch.rounds)}`,
    ).toBe(0);
  }, 150_000);

  it('serves five pairs of teams that swap slugs in one transaction within 10 s', async () => {
    const statements: string[] = [];
    for (let a = 231; a < 241; a += 2) {
      const b = a + 1;
      statements.push(
        `UPDATE teams SET slug = 'w-tmp-${a}' WHERE id = ${a}`,
        `UPDATE teams SET slug = 'w${a}' WHERE id = ${b}`,
        `UPDATE teams SET slug = 'w${b}' WHERE id = ${a}`,
      );
    }
    await transaction(statements);
    let last: unknown;
    await servedWithin(
      async () => {
        const answer = await api.get('/api/w231/projects', { token: ADA });
        last = [answer.status, answer.body?.data?.[0]?.name];
        return answer.status === 200 && answer.body.data[0]?.name === 'P232';
      },
      15_000,
      () => `last ${JSON.stringify(last)}; the sync said ${JSON.stringify(sync.lines)}`,
    );
  }, 40_000);

  it('serves a slug handed along a chain of four teams within 10 s, when the transaction also changed 100 other teams', async () => {
    // Teams 1 to 100 renamed; then 103 gives up "t103" to 102, 102 "t102" to 101, 101 "t101" to team 1.
    await transaction([
      `UPDATE teams SET name = 'Renamed' WHERE id <= 100`,
      `UPDATE teams SET slug = 'fresh-103' WHERE id = 103`,
      `UPDATE teams SET slug = 't103' WHERE id = 102`,
      `UPDATE teams SET slug = 't102' WHERE id = 101`,
      `UPDATE teams SET slug = 't101' WHERE id = 1`,
    ]);
    await servedWithin(
      async () => (await api.get('/api/t103/projects', { token: ADA })).body?.data?.[0]?.name === 'P102',
      20_000,
    );
    let last: unknown;
    await servedWithin(
      async () => {
        const answer = await api.get('/api/t101/projects', { token: ADA });
        last = [answer.status, answer.body?.data?.[0]?.name];
        return answer.status === 200 && answer.body.data[0]?.name === 'P1';
      },
      15_000,
      () => `last ${JSON.stringify(last)}; the sync said ${JSON.stringify(sync.lines)}`,
    );
  }, 60_000);

  it('never lets a token read a team with an ability granted in the transaction that removed its user from the team, when that transaction also changed 100 other teams', async () => {
    // Dave (projects:read) is a member of t104. One transaction renames teams 1 to 100, takes Dave out
    // of 104, and gives his token "*": at no state of the source can he read t104's daemons.
    expect((await api.get('/api/t104/daemons', { token: DAVE })).status).toBe(403);
    let slow = false;
    hook = async (operation, input) => {
      if (
        operation === 'UpdateItem' &&
        JSON.stringify(input?.Key ?? {}).includes('TOKEN#') &&
        JSON.stringify(input?.ExpressionAttributeValues ?? {}).includes('"*"')
      ) {
        slow = true;
      }
      if (slow) await sleep(100);
    };
    const watch = poll(DAVE, ['/api/t104/daemons']);
    try {
      await transaction([
        `UPDATE teams SET name = 'Renamed again' WHERE id <= 100`,
        'DELETE FROM team_user WHERE team_id = 104 AND user_id = 22',
        `UPDATE personal_access_tokens SET abilities = '["*"]' WHERE id = 74`,
      ]);
      await servedWithin(async () => (await api.get('/api/t104/daemons', { token: DAVE })).status === 404, 30_000);
      await settled(); // the batch that applied it is over, watched all along
    } finally {
      hook = undefined;
      await watch.stop();
    }
    expect(
      watch.rounds.filter(([status]) => status === 200).length,
      `statuses seen on t104's daemons: ${tally(watch.rounds)}`,
    ).toBe(0);
  }, 60_000);

  it('serves a user deleted and inserted again (same id) within 10 s, when she is a member of more than 100 teams', async () => {
    expect((await api.get('/api/50/projects', { token: KIM })).status).toBe(200);
    await db.query('DELETE FROM users WHERE id = 26');
    await servedWithin(async () => (await api.get('/api/50/projects', { token: KIM })).status === 401, 20_000);
    await settled();
    // Left from the deletion: a user item of Kim's (written back by a later plan's leave).
    const left = await getItems(table.doc, table.tableName, [userKey(26)], { consistent: true });
    await db.query(
      `INSERT INTO users (id, name, email, password, created_at, updated_at)
       VALUES (26, 'Kim', 'kim@example.test', 'x', ${now}, ${now})`,
    );
    let last = 0;
    await servedWithin(
      async () => {
        last = (await api.get('/api/50/projects', { token: KIM })).status;
        return last === 200;
      },
      15_000,
      () =>
        `Kim's token last got ${last}; her user item after the deletion: ${JSON.stringify(left, (_, v) => (v instanceof Set ? [...v] : v))}; the sync said ${JSON.stringify(sync.lines)}`,
    );
  }, 60_000);
});
