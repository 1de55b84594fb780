import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freshTable } from '../support/dynamodb.ts';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.ts';
import { createSourceDatabase, type SourceDatabase, sourceServer } from '../support/source-databases.ts';
import { seedSource } from '../support/source-seed.ts';
import { servedWithin, setUp, startSync } from '../support/sync.ts';
import { tableApi } from '../support/table-api.ts';

/**
 * DynamoDB gone is said as DynamoDB, never as the source (docs/contract.md, section 9, "Bad data and
 * faults" and "Commands that tell the truth"; issue #40): a write the sync cannot make because nothing
 * accepts connections at DynamoDB's endpoint fails with the same network code (ECONNREFUSED) a source
 * that is down would give, and must not be told as "the source does not answer". The sync's own code,
 * in this process (test/support/sync.ts), through a proxy in front of the suite's DynamoDB Local that
 * stops listening; `npm start`'s DynamoDB Local killed is local-first-pass.test.ts's. Engine-independent:
 * PostgreSQL alone.
 */
const SECRET = 'dynamodb-gone-secret1';

describe.skipIf(sourceServer('postgres').state === 'missing')('DynamoDB gone while the sync runs (PostgreSQL)', () => {
  let db: SourceDatabase;
  let proxy: FaultProxy;
  beforeAll(async () => {
    db = await createSourceDatabase('postgres');
    await seedSource(db, {
      teams: [{ id: 1, slug: 'acme', name: 'Acme', user_id: 10 }],
      users: [{ id: 10, name: 'Ada', teams: [1] }],
      tokens: [{ id: 70, user_id: 10, token: SECRET, abilities: ['*'] }],
    });
    await setUp(db);
    proxy = await startFaultProxy(inject('dynamodbEndpoint'));
  }, 60_000);
  afterAll(async () => {
    await proxy?.close();
    await db?.drop();
  });

  it('is said as DynamoDB failing, not as a source that does not answer; the change is served once it is back', async () => {
    const table = await freshTable(proxy.endpoint);
    const sync = startSync(db, table);
    try {
      await sync.readyNow;
      await proxy.set({ fault: 'refuse' });
      await db.query(
        `INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) VALUES (100, 1, 'Site', 'site', now(), now())`,
      );
      const said = () => sync.lines.filter((line) => /DynamoDB|the source does not answer/.test(line));
      await servedWithin(
        async () => said().length > 0,
        60_000,
        () => sync.lines.join('\n'),
      );
      expect(said()[0]).toMatch(/^DynamoDB failed \(.*ECONNREFUSED.*\); retrying$/);
      expect(sync.lines.join('\n')).not.toContain('the source does not answer');

      // Back, the change is served: nothing was lost meanwhile.
      await proxy.pass();
      const api = tableApi(table);
      await servedWithin(
        async () => (await api.get('/api/acme/projects', { token: SECRET })).body?.meta?.total === 1,
        30_000,
      );
    } finally {
      await sync.stop();
    }
  });
});
