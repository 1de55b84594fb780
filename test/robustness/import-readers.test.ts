import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiResponse, type TestApi } from '../support/api.ts';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { team, token, user } from '../support/snapshots.ts';

/**
 * Readers never see a half-imported team (docs/storage.md, guarantee 2): a request in flight when
 * an import finishes must never get a short or empty page because the generation it read from the
 * head was deleted under it.
 *
 * Here every page Query of the API is slowed on purpose (a proxy holds each one 400 ms) while
 * imports run back to back, and every 200 is checked to describe one state of the team: its
 * items all from one import, in that import's id order, as many as the page of that import's
 * total holds, and `meta` and `links` agreeing. With the real clock, a replaced generation stays
 * for 5 minutes, so no page is ever short. With a clock that jumps 10 minutes per import, the
 * generations requests are reading are deleted under them: those requests must answer 503, never
 * a short 200.
 */
const SECRET = 'readers-secret';
const IMPORTS = 12;
const READERS = 6;
const PER_PAGE = 10;

let table: TestTable;
let proxy: FaultProxy;
let api: TestApi;

/** Import `version`: its own project count and ids, names that say which import wrote them. */
const countOf = (version: number) => 25 + (version % 5) * 4;
const idsOf = (version: number) => Array.from({ length: countOf(version) }, (_, i) => version * 1_000 + i * 3 + 1);
function state(version: number) {
  return {
    teams: [team(1, 'acme')],
    users: [user(10, [1])],
    tokens: [token(10, SECRET)],
    projects: idsOf(version).map((id) => ({
      id,
      team_id: 1,
      client_id: null,
      name: `v${version} project ${id}`,
      slug: `p-${id}`,
      created_at: '2026-01-02T05:04:05Z',
    })),
  };
}

beforeAll(async () => {
  table = await freshTable();
  await importDocument(table, state(0));
  proxy = await startFaultProxy(table.endpoint);
  api = await startApi(table, { DYNAMODB_ENDPOINT: proxy.endpoint });
});
afterAll(async () => {
  await api?.close();
  await proxy?.close();
});

/** Why a 200 does not describe one state of the team, or undefined when it does. */
function inconsistency(res: ApiResponse, page: number): string | undefined {
  const { data, meta, links, results } = res.body as {
    data: { id: number; name: string }[];
    meta: { total: number; current_page: number; from: number | null; to: number | null; last_page: number };
    links: { next: string | null };
    results: number;
  };
  const versions = new Set(data.map((p) => Number(/^v(\d+) /.exec(p.name)?.[1])));
  if (versions.size > 1) return `items of ${versions.size} imports on one page`;
  const version = [...versions][0];
  if (version === undefined) {
    // An empty page is only right past the last page of some import's total.
    const possible = Array.from({ length: 5 }, (_, v) => countOf(v)).includes(meta.total);
    return possible && (page - 1) * PER_PAGE >= meta.total ? undefined : `an empty page ${page} of ${meta.total}`;
  }
  const all = idsOf(version);
  const expected = all.slice((page - 1) * PER_PAGE, page * PER_PAGE);
  if (meta.total !== all.length) return `items of import ${version} with the total of another (${meta.total})`;
  if (JSON.stringify(data.map((p) => p.id)) !== JSON.stringify(expected))
    return `page ${page} of import ${version} holds ${data.length} of ${expected.length} items`;
  if (results !== data.length || meta.to !== (meta.from ?? 0) + results - 1) return 'results, from and to disagree';
  if ((links.next === null) !== page >= meta.last_page) return 'links.next disagrees with last_page';
  return undefined;
}

async function importsWhileReading(clock?: () => number, advance?: () => void) {
  const outcome = { ok: 0, unavailable: 0, other: [] as string[], inconsistent: [] as string[] };
  let done = false;
  const readers = Array.from({ length: READERS }, async (_, reader) => {
    for (let i = 0; !done; i++) {
      const page = 1 + ((reader + i) % 4);
      const res = await api.get(`/api/acme/projects?per_page=${PER_PAGE}&page=${page}`, { token: SECRET });
      if (res.status === 200) {
        outcome.ok++;
        const why = inconsistency(res, page);
        if (why) outcome.inconsistent.push(why);
      } else if (res.status === 503 && res.headers.get('retry-after') === '1') {
        outcome.unavailable++;
      } else {
        outcome.other.push(`${res.status} ${res.text}`);
      }
    }
  });
  for (let version = 1; version <= IMPORTS; version++) {
    await importDocument(table, state(version + (clock ? 200 : 0)), { clock });
    advance?.();
  }
  done = true;
  await Promise.all(readers);
  return outcome;
}

/** How many generations of team 1's projects the table holds. */
async function projectGenerations(): Promise<number> {
  const partitions = new Set<string>();
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await table.doc.send(
      new ScanCommand({ TableName: table.tableName, ProjectionExpression: 'pk', ExclusiveStartKey }),
    );
    for (const item of page.Items ?? [])
      if (/^TEAM#1#G.+#projects$/.test(String(item.pk))) partitions.add(String(item.pk));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return partitions.size;
}

describe('readers while imports run back to back, page reads slowed on purpose', () => {
  it('never get an inconsistent 200: a replaced generation stays readable for 5 minutes', async () => {
    await proxy.set({ fault: 'slow', delayMs: 400, operations: ['Query'] });
    const outcome = await importsWhileReading();
    await proxy.pass();
    console.info(
      `real clock: ${IMPORTS} imports; ${outcome.ok} 200s, ${outcome.inconsistent.length} inconsistent, ${outcome.unavailable} 503s`,
    );
    expect(outcome.inconsistent).toEqual([]);
    expect(outcome.other).toEqual([]);
    expect(outcome.ok).toBeGreaterThan(IMPORTS);
    // Every generation the run replaced is still there, so no reader can have lost its page. (A 503
    // here can only mean DynamoDB Local was too slow for the request's deadline on a loaded machine:
    // the contract's answer for a slow database, not a page deleted under it.)
    expect(await projectGenerations()).toBe(IMPORTS + 1);
  }, 120_000);

  it('answer 503, never a short 200, when the generation they read is deleted under them', async () => {
    // Each import runs 10 minutes after the one before, by its clock, so the generation a request
    // read from the head is past retention at the next import but one. The request's page Query
    // is held until two imports have run: the generation is gone when it reads.
    let now = Date.now();
    const clock = () => now;
    let version = 100;
    await importDocument(table, state(version), { clock });
    const answers: ApiResponse[] = [];
    for (let round = 0; round < 3; round++) {
      await proxy.set({ fault: 'hold', operations: ['Query'] });
      // With If-None-Match (a tag that never matches) the function sends no Query before it has
      // read the head, so the Query held here is the one on the generation the head named.
      const request = api.get(`/api/acme/projects?per_page=${PER_PAGE}&page=2`, {
        token: SECRET,
        headers: { 'If-None-Match': '"never"' },
      });
      while (proxy.held === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      for (let i = 0; i < 2; i++) {
        now += 10 * 60_000;
        await importDocument(table, state(++version), { clock });
      }
      // Let the held Query go, and the reader's second reading after it.
      let answered = false;
      void request.then(() => (answered = true));
      while (!answered) {
        proxy.release();
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      answers.push(await request);
      await proxy.pass();
    }
    console.info(`generation deleted under the request: ${answers.map((res) => res.status).join(', ')}`);
    for (const res of answers) {
      expect(res.status).toBe(503);
      expect(res.text).toBe('{"message":"Service Unavailable"}');
      expect(res.headers.get('retry-after')).toBe('1');
    }
    // And once the request is not slowed, the team answers as the last import left it.
    const res = await api.get(`/api/acme/projects?per_page=${PER_PAGE}&page=2`, { token: SECRET });
    expect(res.status).toBe(200);
    expect(inconsistency(res, 2)).toBeUndefined();
  }, 120_000);

  it('never get an inconsistent 200 when imports run faster than retention allows, page reads slowed', async () => {
    let now = Date.now();
    await proxy.set({ fault: 'slow', delayMs: 400, operations: ['Query'] });
    const outcome = await importsWhileReading(
      () => now,
      () => (now += 10 * 60_000),
    );
    await proxy.pass();
    console.info(
      `clock 10 minutes per import: ${IMPORTS} imports; ${outcome.ok} 200s, ${outcome.inconsistent.length} inconsistent, ${outcome.unavailable} 503s`,
    );
    expect(outcome.inconsistent).toEqual([]);
    expect(outcome.other).toEqual([]);
  }, 120_000);
});
