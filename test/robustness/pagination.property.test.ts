import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { contractProblems } from '../support/contract-bodies.ts';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { propertyParameters, replayHint, runs, timeLimit } from '../support/fuzz.ts';

/**
 * Pagination invariants, property-based: for random team sizes and per_page values, walking the
 * `next` links from page 1 returns every item exactly once, in id order, and every page's
 * total, last_page, from, to, results and links agree with each other and with the data.
 */
const FILE = 'test/robustness/pagination.property.test.ts';
const RUNS = 15;
/** A run imports a team and reads every page: shrinking a failure tries at most this many smaller teams. */
const MAX_SHRINKS = 100;
const SECRET = 'pagination-secret';

let api: TestApi;
let table: TestTable;
let run = 0;
let pagesRead = 0;

beforeAll(async () => {
  table = await freshTable();
  api = await startApi(table);
});
afterAll(() => api?.close());

const spec = fc.record({
  projects: fc.integer({ min: 0, max: 130 }),
  daemons: fc.integer({ min: 0, max: 70 }),
  /** Gaps between consecutive ids, so ids are sparse as real ids are. */
  gaps: fc.array(fc.integer({ min: 1, max: 1_000 }), { minLength: 1, maxLength: 7 }),
  perPage: fc.option(fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 50 })), {
    nil: undefined,
    freq: 4,
  }),
  bySlug: fc.boolean(),
  pastLast: fc.integer({ min: 1, max: 1_000_000 }),
});

function ids(count: number, first: number, gaps: number[]): number[] {
  const list: number[] = [];
  let id = first;
  for (let i = 0; i < count; i++) {
    id += gaps[i % gaps.length]!;
    list.push(id);
  }
  return list;
}

async function getJson(url: string) {
  const res = await fetch(url, { headers: { Authorization: `Bearer ${SECRET}`, Accept: 'application/json' } });
  const text = await res.text();
  pagesRead++;
  return { status: res.status, headers: Object.fromEntries(res.headers), text, body: JSON.parse(text) };
}

describe('pagination invariants (property-based, through HTTP)', () => {
  it(
    'walking next links returns every item exactly once in id order, and the page numbers agree',
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.limitShrink(spec, MAX_SHRINKS), async (s) => {
          run++;
          const teamId = 100 + run;
          const slug = `pages-${run}`;
          const projectIds = ids(s.projects, teamId * 1_000_000, s.gaps);
          const daemonIds = ids(s.daemons, teamId * 1_000_000, [...s.gaps].reverse());
          // Written in reverse id order: the API must order them itself.
          await importDocument(table, {
            teams: [{ id: teamId, slug, name: `Pages ${run}` }],
            users: [{ id: 1, teams: [teamId] }],
            tokens: [{ user_id: 1, token: SECRET, abilities: ['*'] }],
            environments: [{ id: teamId, team_id: teamId, name: 'production' }],
            servers: [{ id: teamId, team_id: teamId, name: 'web', monthly_cost: '1', currency: 'EUR' }],
            projects: [...projectIds].reverse().map((id) => ({
              id,
              team_id: teamId,
              name: `project ${id}`,
              slug: `p-${id}`,
              created_at: '2026-03-04T05:06:07Z',
            })),
            daemons: [...daemonIds].reverse().map((id) => ({
              id,
              environment_id: teamId,
              server_id: teamId,
              name: `d-${id}`,
              command: 'run',
              username: 'u',
              directory: '/',
              processes: 1,
            })),
          });
          const segment = s.bySlug ? slug : String(teamId);
          for (const [resource, expectedIds] of [
            ['projects', projectIds],
            ['daemons', daemonIds],
          ] as const) {
            const perPage = s.perPage ?? 20;
            const total = expectedIds.length;
            const lastPage = Math.max(Math.ceil(total / perPage), 1);
            const path = `${api.server.url}/api/${segment}/${resource}`;
            const link = (page: number) =>
              s.perPage === undefined ? `${path}?page=${page}` : `${path}?per_page=${perPage}&page=${page}`;
            const seen: number[] = [];
            let url: string | null = s.perPage === undefined ? path : `${path}?per_page=${perPage}`;
            let page = 0;
            while (url !== null) {
              page++;
              expect(page, 'more pages than last_page').toBeLessThanOrEqual(lastPage);
              const res = await getJson(url);
              expect(res.status).toBe(200);
              expect(contractProblems({ status: res.status, headers: res.headers, body: res.text })).toEqual([]);
              const { data, links, meta, results } = res.body;
              const from = data.length > 0 ? (page - 1) * perPage + 1 : null;
              expect(meta).toEqual({
                current_page: page,
                from,
                last_page: lastPage,
                per_page: perPage,
                to: from === null ? null : from + data.length - 1,
                total,
                path,
              });
              expect(results).toBe(data.length);
              expect(data.length).toBe(page < lastPage ? perPage : total - (lastPage - 1) * perPage);
              expect(links).toEqual({
                first: link(1),
                last: link(lastPage),
                prev: page > 1 ? link(page - 1) : null,
                next: page < lastPage ? link(page + 1) : null,
              });
              seen.push(...data.map((item: { id: number }) => item.id));
              url = links.next;
            }
            expect(page).toBe(lastPage);
            expect(seen).toEqual(expectedIds);

            // A page past the last: 200, empty, current_page as asked, prev the page before it.
            const past = lastPage + s.pastLast;
            const res = await getJson(link(past));
            expect(res.status).toBe(200);
            expect(res.body.data).toEqual([]);
            expect(res.body.meta).toMatchObject({
              current_page: past,
              from: null,
              to: null,
              total,
              last_page: lastPage,
            });
            expect(res.body.links).toMatchObject({ prev: link(past - 1), next: null, last: link(lastPage) });
          }
        }),
        propertyParameters(RUNS),
      );
      console.info(`pagination: ${run} teams, ${pagesRead} pages read; ${replayHint(FILE)}`);
    },
    timeLimit(180_000, RUNS, runs(RUNS)),
  );
});
