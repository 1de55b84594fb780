import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importDocument } from '../support/dynamodb.ts';
import { limitedDynamoDb, throughCommandClients } from '../support/limited-dynamodb.ts';
import { projects, server, snapshot, team, token, user } from '../support/snapshots.ts';
import { createSourceDatabase, type SourceDatabase, sourceServer } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { servedWithin, setUp, startSync } from '../support/sync.ts';
import { countedOn, type WriteCount } from '../support/writes.ts';

/**
 * First loads at the floor (docs/contract.md, section 9, "At any size"): each token a first load
 * writes costs at most 3 items, its own (the token, written once, whole, with its memberships), its
 * user's index entry, and for a token that came from Sanctum the item of its Sanctum id; not a
 * token written inactive, then activated, then given its memberships one by one. Counted at the
 * writers' own clients, through the limiter, for an import and for the sync's first full pass: 20
 * teams of 50 projects, 200 users with 5 tokens each. Users and the teams' member index are counted
 * per user, apart: they do not grow with a user's tokens.
 */
const live = limitedDynamoDb();
const TEAMS = 20;
const USERS = 200;
const TOKENS_PER_USER = 5;
const TOKENS = USERS * TOKENS_PER_USER;
const teamIds = Array.from({ length: TEAMS }, (_, i) => i + 1);
const userIds = Array.from({ length: USERS }, (_, i) => 1_000 + i);
/** Each user a member of two teams. */
const teamsOf = (userId: number) => [1 + (userId % TEAMS), 1 + ((userId + 7) % TEAMS)];
const secret = (userId: number, n: number) => `first-load-secret-${userId}-${n}`;

/** Items per token of what a first load wrote: the token's own; its user's and memberships' said apart. */
function perToken(count: WriteCount) {
  return {
    tokenItems: count.of('token', 'user token', 'sanctum') / TOKENS,
    figure:
      `${count.of('token')} tokens, ${count.of('user token')} index entries, ${count.of('sanctum')} Sanctum ids ` +
      `for ${TOKENS} tokens; ${count.of('user')} user items for ${USERS} users, ` +
      `${count.of('member')} member entries for ${USERS * 2} memberships`,
  };
}

describe('a first load', () => {
  it(`by an import writes at most 3 items a token (${TOKENS} tokens)`, async () => {
    const table = throughCommandClients(await live.table(), live.endpoint);
    const counted = countedOn(table);
    const written = await counted.count(() =>
      importDocument(
        table,
        snapshot({
          teams: teamIds.map((id) => team(id)),
          users: userIds.map((id) => user(id, teamsOf(id))),
          tokens: userIds.flatMap((id) => Array.from({ length: TOKENS_PER_USER }, (_, n) => token(id, secret(id, n)))),
          servers: teamIds.map((id) => server(id, id)),
          projects: teamIds.flatMap((id) => projects(id, 50)),
        }),
      ),
    );
    const { tokenItems, figure } = perToken(written);
    console.info(`an import's first load: ${figure}`);
    expect(written.of('token')).toBe(TOKENS);
    expect(tokenItems).toBeLessThanOrEqual(3);
  }, 300_000);

  describe.skipIf(sourceServer('postgres').state === 'missing')('by the sync (PostgreSQL)', () => {
    let db: SourceDatabase;
    beforeAll(async () => {
      db = await createSourceDatabase('postgres');
      await seedSource(db, {
        teams: teamIds.map((id) => ({ id, slug: `team-${id}`, name: `Team ${id}` })),
        users: userIds.map((id) => ({ id, name: `User ${id}`, teams: teamsOf(id) })),
        tokens: userIds.flatMap((id) =>
          Array.from({ length: TOKENS_PER_USER }, (_, n) => ({ user_id: id, token: secret(id, n), abilities: ['*'] })),
        ),
        projects: teamIds.flatMap((id) => projects(id, 50)),
      });
      await setUp(db);
    }, 120_000);
    afterAll(async () => {
      await db?.drop();
    });

    it(`writes at most 3 items a token (${TOKENS} tokens)`, async () => {
      const table = throughCommandClients(await live.table(), live.endpoint);
      const counted = countedOn(table);
      const written = counted.restart();
      const sync = startSync(db, table);
      try {
        await servedWithin(
          async () => sync.ready,
          240_000,
          () => sync.lines.join('\n'),
        );
      } finally {
        await sync.stop();
      }
      const { tokenItems, figure } = perToken(written);
      console.info(`the sync's first load: ${figure}`);
      expect(written.of('token')).toBe(TOKENS);
      expect(tokenItems).toBeLessThanOrEqual(3);
    }, 300_000);
  });
});
