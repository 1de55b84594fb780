import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { hashToken } from '../../shared/api/bearer.ts';
import { JSON_CONTENT_TYPE } from '../../shared/api/http/envelope.ts';
import { authorize, readCredentials, type AccessRead } from '../../shared/api/http/checks.ts';
import type { Ability } from '../../shared/table/abilities.ts';
import type { ReadOptions, StoredToken, TeamFinance, TeamHead, TeamState } from '../../shared/api/team-reader.ts';
import { apiContext, apiEvent, apiRequest, thrownContractError, type ApiRequest } from '../support/middy-request.ts';

/**
 * authorize on its own: checks 1 to 3 of the contract's order (token 401, ability 403, team and
 * membership 404), the handler's step after the request's credentials are read, on what its one read returns: the team's head for a
 * list, its finance item for finances. The read is a stand-in over a few tokens and one team
 * that records its calls; the real reads, and what each request costs, are tested against
 * DynamoDB Local (read-cost.test.ts).
 */
const NOW = new Date('2026-06-01T12:00:00.000Z');
beforeEach(() => vi.useFakeTimers({ now: NOW, toFake: ['Date'] }));
afterEach(() => vi.useRealTimers());

/** Team 1 (acme)'s projects head: its members generation is g2, as is its projects' current generation. */
const ACME: TeamHead = {
  teamId: 1,
  membersGeneration: 'g2',
  resource: 'projects',
  list: { generation: 'g2', count: 3, base: 3, revision: 1, entries: [] },
};
const ACME_FINANCE: TeamFinance = {
  teamId: 1,
  membersGeneration: 'g2',
  fieldsJson: '"data":[],"totals":{},"grand_total":0,"results":0',
  tag: 'f1',
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
  sanctum: storedToken({ sanctumId: 5 }),
};

type Call = { tokenHash: string; teamSegment: string; signal?: AbortSignal; consistent?: boolean };

/** A stand-in for the one read, over the tokens above and team 1 (as `acme` or `1`), recording each call. */
function standInRead<T extends TeamState>(team: T): AccessRead<T> & { calls: Call[] } {
  const tokens = new Map(Object.entries(TOKENS).map(([secret, token]) => [hashToken(secret), token]));
  const calls: Call[] = [];
  const read = async (tokenHash: string, teamSegment: string, { signal, consistent }: ReadOptions) => {
    calls.push({ tokenHash, teamSegment, signal, consistent });
    return { token: tokens.get(tokenHash), team: ['1', 'acme'].includes(teamSegment) ? team : undefined };
  };
  return Object.assign(read, { calls });
}

/** authorize as a handler calls it, on the request's credentials, with the request's signal. */
const authorizing =
  <T extends TeamState>(ability: Ability, read: AccessRead<T>) =>
  (request: { event: ApiRequest['event']; context: ApiRequest['context'] }) =>
    authorize(readCredentials(request.event), ability, read, request.context);

function setUp(options: { ability?: Ability; read?: AccessRead<TeamHead> } = {}) {
  const read = standInRead(ACME);
  const check = authorizing(options.ability ?? 'projects:read', options.read ?? read);
  return { calls: read.calls, check };
}

function requestWith(authorization: string | undefined, team = 'acme'): ApiRequest {
  return apiRequest({ event: apiEvent({ team, headers: authorization === undefined ? {} : { authorization } }) });
}

/** The contract error authorize throws for this request, or a failed test. */
const rejection = (check: (request: ApiRequest) => Promise<unknown>, request: ApiRequest) =>
  thrownContractError(() => check(request));

describe('authorize', () => {
  it('reads the token by the SHA-256 of its secret and the team by the path segment as written, in one call with the request signal', async () => {
    const { calls, check } = setUp();
    const request = requestWith('Bearer all', 'acme');
    await check(request);
    expect(calls).toEqual([
      {
        tokenHash: hashToken('all'),
        teamSegment: 'acme',
        signal: request.context.signal,
        consistent: false,
      },
    ]);
  });

  it('returns the team head, the token and the segment when every check passes', async () => {
    const { check } = setUp();
    const request = requestWith('Bearer all', '1');
    const access = await check(request);
    expect(access).toEqual({ team: ACME, token: TOKENS.all, teamSegment: '1' });
  });

  it('accepts the scheme in any case and spaces around the header value', async () => {
    const { check } = setUp();
    const request = requestWith('  bEaReR   all  ');
    const access = await check(request);
    expect(access?.token).toEqual(TOKENS.all);
  });

  it('throws 401 Unauthenticated with WWW-Authenticate: Bearer, reading nothing, when there is no Authorization header', async () => {
    const { calls, check } = setUp();
    const error = await rejection(check, requestWith(undefined));
    expect(error.status).toBe(401);
    expect(error.body).toEqual({ message: 'Unauthenticated.' });
    expect(error.headers).toEqual({ 'Content-Type': JSON_CONTENT_TYPE, 'WWW-Authenticate': 'Bearer' });
    expect(calls).toEqual([]);
  });

  it.each(['Basic YWxsOg==', 'Bearer', 'Bearer all extra', 'all'])(
    'throws 401, reading nothing, when the header is %j',
    async (authorization) => {
      const { calls, check } = setUp();
      expect((await rejection(check, requestWith(authorization))).status).toBe(401);
      expect(calls).toEqual([]);
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
    ['5|sanctum', 'acme', 200], // Sanctum's <id>|<secret>, naming the token's id
    ['05|sanctum', 'acme', 200], // the id compared as a number
    ['6|sanctum', 'acme', 401], // another token's id: as an unknown token
    ['5|all', 'acme', 401], // an id given for a token imported without one
    ['x|all', 'acme', 401], // an id that is not digits names no token
  ])('answers %s for team %s: %i', async (secret, team, status) => {
    const { check } = setUp();
    const request = requestWith(`Bearer ${secret}`, team);
    if (status === 200) return expect(check(request)).resolves.toMatchObject({ team: ACME });
    const error = await rejection(check, request);
    expect(error.status).toBe(status);
    if (status === 404)
      expect({ body: error.body, headers: error.headers }).toEqual({
        body: { message: 'Not Found' },
        headers: { 'Content-Type': JSON_CONTENT_TYPE },
      });
  });

  it('accepts a token that expires a millisecond from now', async () => {
    const { check } = setUp();
    const request = requestWith('Bearer expiresLater');
    const access = await check(request);
    expect(access?.token).toEqual(TOKENS.expiresLater);
  });

  it("throws 403 naming the route's ability in the message and in missing_permissions when the token lacks it", async () => {
    const { check } = setUp({ ability: 'finances:read' });
    const error = await rejection(check, requestWith('Bearer projects'));
    expect(error.status).toBe(403);
    expect(error.body).toEqual({
      message: 'This token does not have the finances:read ability.',
      code: 'insufficient_permission',
      missing_permissions: ['finances:read'],
    });
  });

  it("lets a token with exactly the route's ability through", async () => {
    const { check } = setUp({ ability: 'projects:read' });
    const request = requestWith('Bearer projects');
    const access = await check(request);
    expect(access?.token).toEqual(TOKENS.projects);
  });

  it.each(['finances:read', 'daemons:read', 'projects:read'] as const)(
    'lets a * token through to %s',
    async (ability) => {
      const { check } = setUp({ ability });
      const request = requestWith('Bearer all');
      const access = await check(request);
      expect(access?.team).toEqual(ACME);
    },
  );

  it('confirms a 404 for a valid token on one strongly consistent read, and never reads twice for an unknown token', async () => {
    const { calls, check } = setUp();
    await rejection(check, requestWith('Bearer outsider', 'acme'));
    expect(calls.map((c) => c.consistent)).toEqual([false, true]);
    calls.length = 0;
    await rejection(check, requestWith('Bearer unknown', 'acme'));
    expect(calls.map((c) => c.consistent)).toEqual([false]);
  });
});

describe('authorize for finances: the same checks on the finance item', () => {
  const setUpFinances = (ability: Ability = 'finances:read') => {
    const read = standInRead(ACME_FINANCE);
    return { calls: read.calls, check: authorizing(ability, read) };
  };

  const financeRequestWith = (authorization: string, team = 'acme') =>
    apiRequest({ event: apiEvent({ route: 'finances', team, headers: { authorization } }) });

  it("reads the token and the team's finance item in one call, and returns the finance item", async () => {
    const { calls, check } = setUpFinances();
    const request = financeRequestWith('Bearer all', 'acme');
    const access = await check(request);
    expect(calls).toEqual([
      {
        tokenHash: hashToken('all'),
        teamSegment: 'acme',
        signal: request.context.signal,
        consistent: false,
      },
    ]);
    expect(access).toEqual({ team: ACME_FINANCE, token: TOKENS.all, teamSegment: 'acme' });
  });

  it("checks in the contract's order: 401 for an expired token, 403 without finances:read, 404 for a non-member", async () => {
    const { check } = setUpFinances();
    const statuses = [];
    for (const secret of ['expiredWithoutAbility', 'projects', 'outsider']) {
      statuses.push((await thrownContractError(() => check(financeRequestWith(`Bearer ${secret}`)))).status);
    }
    expect(statuses).toEqual([401, 403, 404]);
  });

  it('names finances:read in its 403', async () => {
    const { check } = setUpFinances();
    expect(
      (await thrownContractError(() => check(financeRequestWith('Bearer projects')))).body.missing_permissions,
    ).toEqual(['finances:read']);
  });
});

describe('authorize, on error', () => {
  it('lets a failure of the reader (DynamoDB unreachable) through unchanged, for the error handling to answer', async () => {
    const failure = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const { check } = setUp({ read: async () => Promise.reject(failure) });
    const request = apiRequest({
      event: apiEvent({ headers: { authorization: 'Bearer all' } }),
      context: apiContext(),
    });
    await expect(check(request)).rejects.toBe(failure);
  });
});
