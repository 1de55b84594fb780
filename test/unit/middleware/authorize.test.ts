import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { hashToken } from '../../../shared/auth/bearer.ts';
import type { Ability } from '../../../shared/routes.ts';
import { authorize, authorizeFinances } from '../../../shared/http/middleware/authorize.ts';
import { RecentAccess } from '../../../shared/store/recent-access.ts';
import type { Ordinals } from '../../../shared/domain/pagination.ts';
import type {
  Prefetched,
  ReadOptions,
  StoredToken,
  TeamFinance,
  TeamHead,
  TeamReader,
  TeamState,
} from '../../../shared/store/team-reader.ts';
import { JSON_CONTENT_TYPE } from '../../../shared/http/envelope.ts';
import {
  apiContext,
  apiEvent,
  apiRequest,
  thrownContractError,
  type ApiRequest,
  type FinanceContext,
} from '../../support/middy-request.ts';

/**
 * The authorize middlewares on their own: checks 1 to 3 of the contract's order (token 401,
 * ability 403, team and membership 404) before the handler runs, on the team's head for a list
 * (authorize) or its finance item (authorizeFinances). Their reader is a stand-in for the
 * methods they call (readAccess, readFinanceAccess, prefetchPage), holding a few tokens and one
 * team; the real reader, and what each request costs, are tested against DynamoDB Local
 * (read-cost.test.ts).
 */
const NOW = new Date('2026-06-01T12:00:00.000Z');
beforeEach(() => vi.useFakeTimers({ now: NOW, toFake: ['Date'] }));
afterEach(() => vi.useRealTimers());

/** Team 1 (acme), whose current generation is g2. */
const ACME: TeamHead = { teamId: 1, generation: 'g2', counts: { projects: 3, daemons: 1 } };
const ACME_FINANCE: TeamFinance = {
  teamId: 1,
  generation: 'g2',
  fieldsJson: '"data":[],"totals":{},"grand_total":0,"results":0',
};

/** A valid token of user 10, a member of team 1 in its current generation. */
const storedToken = (parts: Partial<StoredToken> = {}): StoredToken => ({
  userId: 10,
  abilities: ['*'],
  expiresAt: null,
  revokedAt: null,
  inactive: false,
  memberships: new Set(['1#g2']),
  ...parts,
});

const TOKENS: Record<string, StoredToken> = {
  all: storedToken(),
  projects: storedToken({ abilities: ['projects:read'] }),
  none: storedToken({ abilities: [] }),
  revoked: storedToken({ revokedAt: '2026-05-01T00:00:00+00:00' }),
  inactive: storedToken({ inactive: true }),
  expiresNow: storedToken({ expiresAt: '2026-06-01T12:00:00+00:00' }),
  expiresLater: storedToken({ expiresAt: '2026-06-01T12:00:00.001+00:00' }),
  expiredWithoutAbility: storedToken({ abilities: [], expiresAt: '2020-01-01T00:00:00+00:00' }),
  outsider: storedToken({ userId: 99, memberships: new Set() }),
  formerMember: storedToken({ userId: 98, memberships: new Set(['1#g1']) }),
};

type AccessPort = Pick<TeamReader, 'readAccess' | 'readFinanceAccess' | 'prefetchPage'>;
type Call = {
  method: string;
  tokenHash?: string;
  teamSegment?: string;
  signal?: AbortSignal;
  consistent?: boolean;
  generation?: string;
  ordinals?: Ordinals;
};

/** A stand-in for the reader's reads: the port the middlewares use, over a few tokens and one team. */
class StandInReader implements AccessPort {
  readonly calls: Call[] = [];
  private readonly tokens = new Map(Object.entries(TOKENS).map(([secret, token]) => [hashToken(secret), token]));
  private readonly segments = new Set(['1', 'acme']);

  async readAccess(tokenHash: string, teamSegment: string, options: ReadOptions = {}) {
    this.calls.push({
      method: 'readAccess',
      tokenHash,
      teamSegment,
      signal: options.signal,
      consistent: options.consistent,
    });
    return { token: this.tokens.get(tokenHash), team: this.segments.has(teamSegment) ? ACME : undefined };
  }

  async readFinanceAccess(tokenHash: string, teamSegment: string, options: ReadOptions = {}) {
    this.calls.push({
      method: 'readFinanceAccess',
      tokenHash,
      teamSegment,
      signal: options.signal,
      consistent: options.consistent,
    });
    return { token: this.tokens.get(tokenHash), team: this.segments.has(teamSegment) ? ACME_FINANCE : undefined };
  }

  async prefetchPage(
    team: TeamState,
    _resource: 'projects' | 'daemons',
    ordinals: Ordinals,
    options: ReadOptions = {},
  ): Promise<Prefetched> {
    this.calls.push({ method: 'prefetchPage', generation: team.generation, ordinals, signal: options.signal });
    return { team, items: [] };
  }
}

function setUp(options: { ability?: Ability; reader?: Pick<TeamReader, 'readAccess'> } = {}) {
  const reader = options.reader ?? new StandInReader();
  const middleware = authorize({
    reader: reader as TeamReader,
    ability: options.ability ?? 'projects:read',
    resource: 'projects',
    recent: new RecentAccess(),
  });
  return { reader, middleware };
}

function requestWith(authorization: string | undefined, team = 'acme'): ApiRequest {
  return apiRequest({ event: apiEvent({ team, headers: authorization === undefined ? {} : { authorization } }) });
}

/** The contract error `before` throws for this request, or a failed test. */
const rejection = (middleware: ReturnType<typeof authorize>, request: ApiRequest) =>
  thrownContractError(() => middleware.before!(request));

describe('authorize, before the handler', () => {
  it('reads the token by the SHA-256 of its secret and the team by the path segment as written, in one call with the request signal', async () => {
    const { reader, middleware } = setUp();
    const request = requestWith('Bearer all', 'acme');
    await middleware.before!(request);
    expect((reader as StandInReader).calls).toEqual([
      {
        method: 'readAccess',
        tokenHash: hashToken('all'),
        teamSegment: 'acme',
        signal: request.context.signal,
        consistent: false,
      },
    ]);
  });

  it('puts the team head, the token and the segment on context.access when every check passes', async () => {
    const { middleware } = setUp();
    const request = requestWith('Bearer all', '1');
    await middleware.before!(request);
    expect(request.context.access).toEqual({ team: ACME, token: TOKENS.all, teamSegment: '1' });
  });

  it('accepts the scheme in any case and spaces around the header value', async () => {
    const { middleware } = setUp();
    const request = requestWith('  bEaReR   all  ');
    await middleware.before!(request);
    expect(request.context.access?.token).toEqual(TOKENS.all);
  });

  it('throws 401 Unauthenticated with WWW-Authenticate: Bearer, reading nothing, when there is no Authorization header', async () => {
    const { reader, middleware } = setUp();
    const error = await rejection(middleware, requestWith(undefined));
    expect(error.status).toBe(401);
    expect(error.body).toEqual({ message: 'Unauthenticated.' });
    expect(error.headers).toEqual({ 'Content-Type': JSON_CONTENT_TYPE, 'WWW-Authenticate': 'Bearer' });
    expect((reader as StandInReader).calls).toEqual([]);
  });

  it.each(['Basic YWxsOg==', 'Bearer', 'Bearer all extra', 'all'])(
    'throws 401, reading nothing, when the header is %j',
    async (authorization) => {
      const { reader, middleware } = setUp();
      expect((await rejection(middleware, requestWith(authorization))).status).toBe(401);
      expect((reader as StandInReader).calls).toEqual([]);
    },
  );

  it.each([
    ['unknown', 'acme', 401],
    ['revoked', 'acme', 401],
    ['inactive', 'acme', 401], // written by an import that has not finished
    ['expiresNow', 'acme', 401], // expires at this very moment
    ['expiredWithoutAbility', 'acme', 401], // 401 before 403
    ['none', 'no-such-team', 403], // 403 before 404
    ['all', 'no-such-team', 404],
    ['outsider', 'acme', 404], // the same 404 as for an unknown team
    ['formerMember', 'acme', 404], // a member of an earlier generation only: members switch with the data
    ['all', '01', 404], // an all-digit segment is compared as written: 01 is not team 1
  ])('throws %s for team %s: %i', async (secret, team, status) => {
    const { middleware } = setUp();
    const error = await rejection(middleware, requestWith(`Bearer ${secret}`, team));
    expect(error.status).toBe(status);
    if (status === 404)
      expect({ body: error.body, headers: error.headers }).toEqual({
        body: { message: 'Not Found' },
        headers: { 'Content-Type': JSON_CONTENT_TYPE },
      });
  });

  it('accepts a token that expires a millisecond from now', async () => {
    const { middleware } = setUp();
    const request = requestWith('Bearer expiresLater');
    await middleware.before!(request);
    expect(request.context.access?.token).toEqual(TOKENS.expiresLater);
  });

  it("throws 403 naming the route's ability in the message and in missing_permissions when the token lacks it", async () => {
    const { middleware } = setUp({ ability: 'finances:read' });
    const error = await rejection(middleware, requestWith('Bearer projects'));
    expect(error.status).toBe(403);
    expect(error.body).toEqual({
      message: 'This token does not have the finances:read ability.',
      code: 'insufficient_permission',
      missing_permissions: ['finances:read'],
    });
  });

  it("lets a token with exactly the route's ability through", async () => {
    const { middleware } = setUp({ ability: 'projects:read' });
    const request = requestWith('Bearer projects');
    await middleware.before!(request);
    expect(request.context.access?.token).toEqual(TOKENS.projects);
  });

  it.each(['finances:read', 'daemons:read', 'projects:read'] as const)(
    'lets a * token through to %s',
    async (ability) => {
      const { middleware } = setUp({ ability });
      const request = requestWith('Bearer all');
      await middleware.before!(request);
      expect(request.context.access?.team).toEqual(ACME);
    },
  );

  it('confirms a 404 for a valid token on one strongly consistent read, and never reads twice for an unknown token', async () => {
    const { reader, middleware } = setUp();
    await rejection(middleware, requestWith('Bearer outsider', 'acme'));
    expect((reader as StandInReader).calls.map((c) => c.consistent)).toEqual([false, true]);
    (reader as StandInReader).calls.length = 0;
    await rejection(middleware, requestWith('Bearer unknown', 'acme'));
    expect((reader as StandInReader).calls.map((c) => c.consistent)).toEqual([false]);
  });

  it("sends the page's Query with the token read only for a token that passed for this team before, on the generation it saw", async () => {
    const { reader, middleware } = setUp();
    const calls = (reader as StandInReader).calls;
    await middleware.before!(requestWith('Bearer all', 'acme'));
    expect(calls.map((c) => c.method)).toEqual(['readAccess']);
    calls.length = 0;
    const warm = requestWith('Bearer all', 'acme');
    await middleware.before!(warm);
    expect(calls.map((c) => c.method).sort()).toEqual(['prefetchPage', 'readAccess']);
    expect(calls.find((c) => c.method === 'prefetchPage')).toMatchObject({
      generation: 'g2',
      ordinals: { first: 1, last: 3 },
    });
    expect(warm.context.access?.prefetched?.team.generation).toBe('g2');
    calls.length = 0;
    // Another team segment, an unknown token, a revalidation: no early Query.
    await middleware.before!(requestWith('Bearer all', '1'));
    await rejection(middleware, requestWith('Bearer unknown', 'acme'));
    await middleware.before!(
      apiRequest({
        event: apiEvent({ team: 'acme', headers: { authorization: 'Bearer all', 'if-none-match': '"x"' } }),
      }),
    );
    expect(calls.map((c) => c.method)).toEqual(['readAccess', 'readAccess', 'readAccess']);
  });

  it('stops speculating for a token once it fails a check', async () => {
    const reader = new StandInReader();
    const recent = new RecentAccess();
    const middleware = authorize({
      reader: reader as AccessPort as TeamReader,
      ability: 'projects:read',
      resource: 'projects',
      recent,
    });
    await middleware.before!(requestWith('Bearer expiresLater', 'acme'));
    expect(recent.speculation(hashToken('expiresLater'), 'acme')).toEqual(ACME);
    vi.setSystemTime(new Date('2026-06-01T12:00:01Z'));
    await thrownContractError(() => middleware.before!(requestWith('Bearer expiresLater', 'acme')));
    expect(recent.speculation(hashToken('expiresLater'), 'acme')).toBeUndefined();
  });

  it('leaves context.access unset when it throws', async () => {
    const { middleware } = setUp();
    const request = requestWith('Bearer all', 'no-such-team');
    await rejection(middleware, request);
    expect(request.context.access).toBeUndefined();
  });
});

describe('authorizeFinances, before the handler', () => {
  const setUpFinances = (ability: Ability = 'finances:read') => {
    const reader = new StandInReader();
    return { reader, middleware: authorizeFinances({ reader: reader as AccessPort as TeamReader, ability }) };
  };

  const financeRequestWith = (authorization: string, team = 'acme') =>
    apiRequest<FinanceContext>({ event: apiEvent({ route: 'finances', team, headers: { authorization } }) });

  it("reads the token and the team's finance item in one call, and puts the finance item on context.access", async () => {
    const { reader, middleware } = setUpFinances();
    const request = financeRequestWith('Bearer all', 'acme');
    await middleware.before!(request);
    expect(reader.calls).toEqual([
      {
        method: 'readFinanceAccess',
        tokenHash: hashToken('all'),
        teamSegment: 'acme',
        signal: request.context.signal,
        consistent: false,
      },
    ]);
    expect(request.context.access).toEqual({ team: ACME_FINANCE, token: TOKENS.all, teamSegment: 'acme' });
  });

  it("checks in the contract's order: 401 for an expired token, 403 without finances:read, 404 for a non-member", async () => {
    const { middleware } = setUpFinances();
    const statuses = [];
    for (const secret of ['expiredWithoutAbility', 'projects', 'outsider']) {
      statuses.push(
        (await thrownContractError(() => middleware.before!(financeRequestWith(`Bearer ${secret}`)))).status,
      );
    }
    expect(statuses).toEqual([401, 403, 404]);
  });

  it('names finances:read in its 403', async () => {
    const { middleware } = setUpFinances();
    expect(
      (await thrownContractError(() => middleware.before!(financeRequestWith('Bearer projects')))).body
        .missing_permissions,
    ).toEqual(['finances:read']);
  });
});

describe('authorize, on error', () => {
  it('lets a failure of the reader (DynamoDB unreachable) through unchanged, for the error handling to answer', async () => {
    const failure = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const { middleware } = setUp({ reader: { readAccess: async () => Promise.reject(failure) } });
    const request = apiRequest({
      event: apiEvent({ headers: { authorization: 'Bearer all' } }),
      context: apiContext(),
    });
    await expect(middleware.before!(request)).rejects.toBe(failure);
    expect(request.context.access).toBeUndefined();
  });

  it('has no after or onError step: a response or an error later in the chain passes it untouched', () => {
    const { middleware } = setUp();
    expect(middleware.after).toBeUndefined();
    expect(middleware.onError).toBeUndefined();
  });
});
