import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { hashToken } from '../../shared/api/bearer.ts';
import { authorize, readCredentials } from '../../shared/api/http/checks.ts';
import { type PaginationResult, pageWindow } from '../../shared/api/pagination.ts';
import {
  earlyItems,
  rememberPass,
  startSpeculativePage,
  type RecentPasses,
} from '../../shared/api/speculative-page.ts';
import type { StoredToken, TeamHead } from '../../shared/api/team-reader.ts';
import type { ListLayout } from '../../shared/table/list-layout.ts';
import { apiContext, apiEvent, thrownContractError } from '../support/middy-request.ts';

/**
 * The warm request's early page Query (speculative-page.ts), around authorize as the list handler
 * calls them, with stand-ins for the two reads that record the order they are sent in. What it
 * costs against DynamoDB Local, warm and cold, is in read-cost.test.ts.
 */
const NOW = new Date('2026-06-01T12:00:00.000Z');
beforeEach(() => vi.useFakeTimers({ now: NOW, toFake: ['Date'] }));
afterEach(() => vi.useRealTimers());

const member = (parts: Partial<StoredToken> = {}): StoredToken => ({
  userId: 10,
  abilities: ['*'],
  expiresAt: null,
  revokedAt: null,
  inactive: false,
  memberships: new Set(['1#g2', '1#g3']),
  ...parts,
});
const TOKENS = new Map(
  Object.entries({
    all: member(),
    expiresLater: member({ expiresAt: '2026-06-01T12:00:00.001+00:00' }),
    sanctum: member({ sanctumId: 5 }),
  }).map(([secret, token]) => [hashToken(secret), token]),
);

/** A list function's two steps over stand-in reads; its handler returns what the early Query gives it. */
function listFunction() {
  // The projects' head moves (another generation, or an item changed within one); the members' generation (g2) stays.
  const headAt = (generation: string, entries: ListLayout['entries'] = [], revision = 1): TeamHead => ({
    teamId: 1,
    membersGeneration: 'g2',
    resource: 'projects',
    list: { generation, count: 3, base: 3, revision, entries },
  });
  let head = headAt('g2');
  const sent: string[] = [];
  let pageQuery: (team: TeamHead) => Promise<string[]> = async () => ['{"id":1}', '{"id":2}', '{"id":3}'];
  const reader = {
    async queryPage(team: TeamHead, keys: readonly string[]) {
      // The slots the keys name (a base slot's key starts with its slot's digits).
      const slot = (key: string) => Number.parseInt(key, 10);
      sent.push(`Query ${team.list.generation} ${slot(keys[0]!)}-${slot(keys.at(-1)!)}`);
      return pageQuery(team);
    },
  };
  const read = async (tokenHash: string, teamSegment: string) => {
    sent.push('BatchGetItem');
    return { token: TOKENS.get(tokenHash), team: ['1', 'acme'].includes(teamSegment) ? head : undefined };
  };
  const passes: RecentPasses = new Map();
  const request = async (
    options: { token?: string; team?: string; headers?: Record<string, string>; query?: PaginationResult } = {},
  ): Promise<{ early?: string[] | null }> => {
    const headers = { authorization: `Bearer ${options.token ?? 'all'}`, ...options.headers };
    const event = apiEvent({ team: options.team ?? 'acme', headers });
    const context = apiContext();
    // The list handler's steps (handlers.ts); the page it reads is worked out from the head it was given.
    const credentials = readCredentials(event);
    const query = options.query ?? { ok: true, value: { page: 1, perPage: 20, perPageGiven: false } };
    const revalidating = event.headers['if-none-match'] !== undefined;
    const speculation = startSpeculativePage(passes, reader, { credentials, query, revalidating }, context);
    let passedOn: TeamHead | undefined;
    try {
      const { team } = await authorize(credentials, 'projects:read', read, context);
      passedOn = team;
      const { page, perPage } = query.ok ? query.value : { page: 1, perPage: 20 };
      const { ordinals } = pageWindow(team.list.count, page, perPage);
      return { early: ordinals && (await earlyItems(speculation, team, ordinals)) };
    } finally {
      await rememberPass(passes, speculation, passedOn);
    }
  };
  return {
    request,
    sent,
    moveTo: (generation: string) => {
      head = headAt(generation);
    },
    /** An item changed by the item: the same generation, a new version of `slot` at the next revision. */
    changeSlot: (slot: number) => {
      const revision = head.list.revision + 1;
      head = headAt(head.list.generation, [{ slot, kind: 'changed', revision }], revision);
    },
    answerQueriesWith: (query: typeof pageQuery) => {
      pageQuery = query;
    },
  };
}

describe('the early page Query', () => {
  it("is not sent at a token's first request; after its pass, it goes out before the token's read", async () => {
    const fn = listFunction();
    expect(await fn.request()).toEqual({ early: undefined });
    expect(fn.sent).toEqual(['BatchGetItem']);
    fn.sent.length = 0;
    expect(await fn.request()).toEqual({ early: ['{"id":1}', '{"id":2}', '{"id":3}'] });
    expect(fn.sent).toEqual(['Query g2 1-3', 'BatchGetItem']);
  });

  it('aims at the page the query asks for, on the counts it saw', async () => {
    const fn = listFunction();
    await fn.request();
    fn.sent.length = 0;
    await fn.request({ query: { ok: true, value: { page: 2, perPage: 2, perPageGiven: true } } });
    expect(fn.sent).toEqual(['Query g2 3-3', 'BatchGetItem']);
  });

  it('gives the handler nothing when the head names another generation by now, or when the Query failed', async () => {
    const fn = listFunction();
    await fn.request();
    fn.moveTo('g3');
    expect(await fn.request()).toEqual({ early: undefined });
    // The head it read then is remembered: the next one aims at g3.
    fn.sent.length = 0;
    fn.answerQueriesWith(async () => Promise.reject(new Error('throttled')));
    expect(await fn.request()).toEqual({ early: undefined });
    expect(fn.sent).toEqual(['Query g3 1-3', 'BatchGetItem']);
  });

  it('gives the handler nothing when an item of its page changed by the item (the same generation, another key)', async () => {
    const fn = listFunction();
    await fn.request();
    fn.changeSlot(2);
    expect(await fn.request()).toEqual({ early: undefined });
    // The head it read then is remembered: the next early Query reads the new version, and is used.
    expect(await fn.request()).toEqual({ early: ['{"id":1}', '{"id":2}', '{"id":3}'] });
  });

  it('still uses the early page when an item changed outside it (its keys are the same)', async () => {
    const fn = listFunction();
    await fn.request({ query: { ok: true, value: { page: 1, perPage: 2, perPageGiven: true } } });
    fn.changeSlot(3);
    fn.answerQueriesWith(async () => ['{"id":1}', '{"id":2}']);
    expect(await fn.request({ query: { ok: true, value: { page: 1, perPage: 2, perPageGiven: true } } })).toEqual({
      early: ['{"id":1}', '{"id":2}'],
    });
  });

  it('is never sent for an unknown token, another team segment, a revalidation, or a query that will answer 422', async () => {
    const fn = listFunction();
    await fn.request();
    fn.sent.length = 0;
    await thrownContractError(() => fn.request({ token: 'unknown' }));
    await fn.request({ team: '1' });
    await fn.request({ headers: { 'if-none-match': '"x"' } });
    await fn.request({ query: { ok: false, errors: { page: ['The page field must be an integer.'] } } });
    expect(fn.sent).toEqual(['BatchGetItem', 'BatchGetItem', 'BatchGetItem', 'BatchGetItem']);
  });

  it('keys a Sanctum bearer with its id: a wrong id never rides on the right one', async () => {
    const fn = listFunction();
    await fn.request({ token: '5|sanctum' });
    fn.sent.length = 0;
    expect((await thrownContractError(() => fn.request({ token: '6|sanctum' }))).status).toBe(401);
    expect(fn.sent).toEqual(['BatchGetItem']);
  });

  it('stops for a pair that fails a check, from the next request on', async () => {
    const fn = listFunction();
    await fn.request({ token: 'expiresLater' });
    vi.setSystemTime(new Date('2026-06-01T12:00:01Z'));
    fn.sent.length = 0;
    expect((await thrownContractError(() => fn.request({ token: 'expiresLater' }))).status).toBe(401);
    // Sent with the token's read, before the token was judged: wasted, not used.
    expect(fn.sent).toEqual(['Query g2 1-3', 'BatchGetItem']);
    fn.sent.length = 0;
    await thrownContractError(() => fn.request({ token: 'expiresLater' }));
    expect(fn.sent).toEqual(['BatchGetItem']);
  });

  it('ends a request only once its Query has settled, even one refused before the handler', async () => {
    const fn = listFunction();
    await fn.request({ token: 'expiresLater' });
    vi.setSystemTime(new Date('2026-06-01T12:00:01Z'));
    let answer = () => {};
    fn.answerQueriesWith(() => new Promise((resolve) => (answer = () => resolve([]))));
    let settled = false;
    const refused = thrownContractError(() => fn.request({ token: 'expiresLater' })).finally(() => (settled = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    answer();
    expect((await refused).status).toBe(401);
  });
});
