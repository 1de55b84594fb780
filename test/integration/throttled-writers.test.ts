import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDynamoDbClient } from '../../shared/table/dynamodb-client.ts';
import { importDocument, interceptedTable } from '../support/dynamodb.ts';
import { limitedDynamoDb, throughCommandClients } from '../support/limited-dynamodb.ts';
import { projects, server, snapshot, team, token, user } from '../support/snapshots.ts';
import { createSourceDatabase, type SourceDatabase, sourceServer } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * The writers keep going under DynamoDB's limits (docs/contract.md, section 9, "At any size"), through
 * the limiter (docs/testing.md, "DynamoDB's limits, locally") and the commands' own clients
 * (commands/cli/database.ts), as the SDK and AWS's guidance say: the SDK retries throttled requests
 * (adaptive mode, pacing itself, for the long streams of writes to one key), the batch writer sends
 * unprocessed items again with backoff for about a minute of no progress (shared/table/retry.ts), and
 * a switch cancelled for throttling is sent again (shared/write/team-switch.ts).
 *
 * **Why 20 write units a second, not 1,000.** What breaks a writer's retries is how hard it presses
 * on a key: 16 batches of 25 items in flight. DynamoDB answers a batch in about 10 ms, so they ask a
 * key for some 40,000 units a second against its 1,000; DynamoDB Local on this machine answers them
 * about twenty times slower (some 2,000 items a second in all), so against the limiter's 1,000 they
 * hardly press at all (a list of 100,000 written at 1,000 units a second leaves the SDK's retry quota
 * at 483 of 500). At 20 units a second they press on the limiter as hard as on DynamoDB, and a list of
 * 1,000 items takes the 50 s a list of 50,000 takes at 1,000 units a second. With the SDK's standard
 * mode alone the retry quota runs out (ThrottlingException); with the batch writer's former budget (10
 * resends, a second at most between them) a batch is given up (LeftUnprocessed).
 */
const pressed = limitedDynamoDb({ writeUnitsPerPartitionKey: 20 });
const ITEMS = 1_000;
const SECRET = 'throttled-secret-0001';

/** The limiter's clock, held still while `frozen` is set: a key's spent bucket does not refill meanwhile. */
let frozen: number | undefined;
const still = limitedDynamoDb({ clock: () => frozen ?? performance.now() });

const pages = async (api: ReturnType<typeof tableApi>, slug: string) => {
  const first = await api.get(`/api/${slug}/projects?per_page=50`, { token: SECRET });
  expect(first.status, JSON.stringify(first.body)).toBe(200);
  const last = await api.get(`/api/${slug}/projects?per_page=50&page=${first.body.meta.last_page}`, { token: SECRET });
  return { total: first.body.meta.total, lastId: last.body.data.at(-1)?.id };
};

describe('under the pressure 16 batches in flight put on one key of DynamoDB', () => {
  it(`an import writes a list of ${ITEMS} items at 20 units a second, and every item arrives`, async () => {
    const table = throughCommandClients(await pressed.table(), pressed.endpoint);
    const started = performance.now();
    await importDocument(
      table,
      snapshot({
        teams: [team(1, 'pressed')],
        users: [user(10, [1])],
        tokens: [token(10, SECRET)],
        servers: [server(7, 1)],
        projects: projects(1, ITEMS),
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    console.info(`an import of ${ITEMS} projects at 20 WCU a second per key: ${seconds.toFixed(1)} s`);
    // No faster than the key allows (its bucket starts with a second's worth), and nothing lost.
    expect(seconds).toBeGreaterThanOrEqual((ITEMS - 20) / 20);
    expect(pressed.stats().tables[table.tableName]!.throttled).toBeGreaterThan(0);
    expect(await pages(tableApi(table), 'pressed')).toEqual({ total: ITEMS, lastId: 100_000 + ITEMS });
  }, 300_000);

  describe.skipIf(sourceServer('postgres').state === 'missing')('the sync (PostgreSQL)', () => {
    let db: SourceDatabase;
    beforeAll(async () => {
      db = await createSourceDatabase('postgres');
      await seedSource(db, {
        teams: [{ id: 1, slug: 'pressed', name: 'Pressed', user_id: 10 }],
        users: [{ id: 10, name: 'Ada', teams: [1] }],
        tokens: [{ id: 70, user_id: 10, token: SECRET, abilities: ['*'] }],
        projects: projects(1, ITEMS),
      });
      await setUp(db);
    }, 60_000);
    afterAll(async () => {
      await db?.drop();
    });

    it(`loads a team of ${ITEMS} projects for the first time at 20 units a second, and every item arrives`, async () => {
      const table = throughCommandClients(await pressed.table(), pressed.endpoint);
      const started = performance.now();
      const sync = startSync(db, table);
      try {
        await servedWithin(
          async () => sync.ready,
          150_000,
          () => sync.lines.join('\n'),
        );
        const seconds = (performance.now() - started) / 1000;
        console.info(`the sync's first load of ${ITEMS} projects at 20 WCU a second per key: ${seconds.toFixed(1)} s`);
        expect(seconds).toBeGreaterThanOrEqual((ITEMS - 20) / 20);
        expect(sync.lines).toEqual([]);
        expect(await pages(tableApi(table), 'pressed')).toEqual({ total: ITEMS, lastId: 100_000 + ITEMS });
      } finally {
        await sync.stop();
      }
    }, 300_000);
  });
});

describe('a switch DynamoDB throttles', () => {
  it('is sent again once the key has capacity, not reported as a team that changed meanwhile', async () => {
    const table = throughCommandClients(await still.table(), still.endpoint);
    const data = (name: string) =>
      snapshot({
        teams: [team(1, 'busy')],
        users: [user(10, [1])],
        tokens: [token(10, SECRET)],
        servers: [server(7, 1)],
        projects: projects(1, 30).map((project, i) => (i === 10 ? { ...project, name } : project)),
      });
    await importDocument(table, data('before'));
    // The team's heads' key spends its second of write units while the limiter's clock stands still:
    // the rename's switch (a transaction on that key) is throttled until the clock moves again.
    frozen = performance.now();
    const spender = createDynamoDbClient({ endpoint: still.endpoint, maxAttempts: 1, requestTimeoutMs: 30_000 });
    const spend = (sk: string, kb: number) =>
      spender.send(
        new PutItemCommand({
          TableName: table.tableName,
          Item: { pk: { S: 'TEAMREF#1' }, sk: { S: sk }, v: { S: 'x'.repeat(kb * 1_024 - 40) } },
        }),
      );
    const spent = () => still.stats().tables[table.tableName]!.partitions['TEAMREF#1']!;
    const before = spent().writeUnits;
    for (let i = 0; i < 4; i++) await spend(`spent-${i}`, 250);
    expect(spent().writeUnits - before).toBe(1_000);
    const throttledBefore = spent().throttled;
    const renaming = importDocument(table, data('after'));
    renaming.catch(() => {});
    try {
      await servedWithin(
        async () => spent().throttled > throttledBefore,
        20_000,
        () => 'the switch was never throttled',
      );
    } finally {
      await sleep(300);
      frozen = undefined;
    }
    await renaming;
    const page = await tableApi(table).get('/api/busy/projects', { token: SECRET });
    expect(page.body.data[10].name).toBe('after');
  }, 60_000);
});

describe.skipIf(sourceServer('postgres').state === 'missing')('locks by team (PostgreSQL)', () => {
  let db: SourceDatabase;
  beforeAll(async () => {
    db = await createSourceDatabase('postgres');
    await seedSource(db, {
      teams: [
        { id: 1, slug: 'imported', name: 'Imported', user_id: 10 },
        { id: 2, slug: 'synced', name: 'Synced', user_id: 10 },
      ],
      users: [{ id: 10, name: 'Ada', teams: [1, 2] }],
      tokens: [{ id: 70, user_id: 10, token: SECRET, abilities: ['*'] }],
      projects: [...projects(1, 5), ...projects(2, 5)],
      costs: [{ team_id: 2, label: 'Backups', amount: '5.00', currency: 'EUR' }],
    });
    await setUp(db);
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  it("serves a change of one team while another writer holds another team's lock", async () => {
    const table = throughCommandClients(await still.table(), still.endpoint);
    const api = tableApi(table);
    const sync = startSync(db, table);
    try {
      await sync.readyNow;
      // An import of team 1 stops just before its switch, holding team 1's lock, until let go.
      let holding: () => void = () => {};
      const held = new Promise<void>((resolve) => (holding = resolve));
      let letGo: () => void = () => {};
      const released = new Promise<void>((resolve) => (letGo = resolve));
      const paused = interceptedTable(table, async (operation) => {
        if (operation !== 'TransactWriteItems') return;
        holding();
        await released;
      });
      const importing = importDocument(
        paused.table,
        snapshot({
          teams: [team(1, 'imported', 'Renamed by the import')],
          users: [user(10, [1])],
          tokens: [token(10, 'another-secret-0002')],
          projects: projects(1, 6),
        }),
      );
      importing.catch(() => {});
      await held;
      await db.query(`UPDATE costs SET amount = 7 WHERE team_id = 2`);
      const ms = await servedWithin(
        async () => (await api.get('/api/synced/finances', { token: SECRET })).body.totals?.EUR === 7,
        10_000,
      );
      console.info(`team 2's cost line served in ${Math.round(ms)} ms while an import held team 1's lock`);
      expect(sync.lines.filter((line) => line.startsWith('waiting for'))).toEqual([]);
      letGo();
      await importing;
    } finally {
      await sync.stop();
    }
  }, 120_000);
});
