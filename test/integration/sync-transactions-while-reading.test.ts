import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { describeSources, type SourceDatabase } from '../support/source-databases.ts';
import type { SourceSnapshot } from '../support/source-seed.ts';
import { type appTransactions, attackedSync, pollStatuses, tally } from '../support/sync-attack.ts';
import { type RunningSync, servedWithin } from '../support/sync.ts';
import type { tableApi } from '../support/table-api.ts';

/**
 * A second attack on the sync (docs/contract.md, section 9; docs/sync.md), on what the first one's
 * fixes touched: one plan per batch (applyTogether), slugs handed over and swapped, members leaving
 * before joining, a transaction committed while the sync reads an earlier change of its team. Each
 * case is named after the behaviour the contract promises. Its cases at scale (transactions of more
 * than 20,000 changes or over 100 teams) are sync-transactions-at-scale.test.ts, in the `at-size`
 * project (vitest.config.ts).
 */
const ADA = 'again-ada-token-000001';
const UMA = 'again-uma-token-000002';
const FAY = 'again-fay-token-000003';
const GUS = 'again-gus-token-000004';
const IVY = 'again-ivy-token-000006';

const team = (id: number, slug: string) => ({ id, slug, name: `Team ${id}`, user_id: 10 });

function data(): SourceSnapshot {
  const all = [
    team(5, 't5'),
    team(201, 'snap'),
    team(202, 'snap-home'),
    team(211, 'ha'),
    team(212, 'hb'),
    team(221, 'ca'),
    team(222, 'cb'),
    team(223, 'cc'),
    ...Array.from({ length: 10 }, (_, i) => team(231 + i, `w${231 + i}`)),
  ];
  return {
    teams: all,
    users: [
      { id: 10, name: 'Ada' },
      { id: 20, name: 'Uma', teams: [202] },
      { id: 21, name: 'Vic', teams: [202] },
      { id: 23, name: 'Fay', teams: [212] },
      { id: 24, name: 'Gus', teams: [222] },
      { id: 25, name: 'Ivy', teams: [202] },
    ],
    tokens: [
      { id: 70, user_id: 10, token: ADA, abilities: ['*'] },
      { id: 71, user_id: 20, token: UMA, abilities: ['*'] },
      { id: 72, user_id: 23, token: FAY, abilities: ['*'] },
      { id: 73, user_id: 24, token: GUS, abilities: ['*'] },
      { id: 75, user_id: 25, token: IVY, name: 'ivy', abilities: ['*'] },
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

describeSources('a transaction served whole, while the sync reads', (engine) => {
  let db: SourceDatabase;
  let api: ReturnType<typeof tableApi>;
  let sync: RunningSync;
  let app: ReturnType<typeof appTransactions>;
  /** What the sync's next DynamoDB call waits for (set by a case, cleared after it). */
  let hook: ((operation: string, input: any) => void | Promise<void>) | undefined;
  const transaction = (statements: string[]) => app.transaction(statements);
  const member = (teamId: number, userId: number) => app.member(teamId, userId);
  const poll = (token: string, paths: string[]) => pollStatuses(api, token, paths);

  let settled: () => Promise<void>;
  attackedSync(
    engine,
    { data, token: ADA },
    () => hook,
    () => {
      hook = undefined;
    },
    (ready) => {
      ({ db, api, sync, app, settled } = ready);
    },
  );

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
});
