import { describe, expect, it } from 'vitest';
import { hashToken } from '../../../shared/auth/token.ts';
import type { Ability } from '../../../shared/domain/abilities.ts';
import { authorize } from '../../../shared/http/middleware/authorize.ts';
import type { StoredToken, TeamHead, TeamReader } from '../../../shared/store/team-reader.ts';
import { JSON_CONTENT_TYPE } from '../../../shared/http/response.ts';
import { apiContext, apiEvent, apiRequest, thrownContractError, type ApiRequest } from '../../support/middy-request.ts';

/**
 * The authorize middleware on its own: checks 1 to 3 of the contract's order (token 401,
 * ability 403, team and membership 404) before the handler runs. Its reader is a stand-in for
 * the one method it calls (readAccess), holding a few tokens and teams; the real reader is
 * tested against DynamoDB Local.
 */
const NOW = new Date('2026-06-01T12:00:00.000Z');

const head = (teamId: number, slug: string, members: number[]): TeamHead => ({
  teamId, slug, generation: 'g1', counts: { projects: 3, daemons: 1 }, financeJson: '"data":[]', members: new Set(members),
});
const storedToken = (parts: Partial<StoredToken> = {}): StoredToken => ({ userId: 10, abilities: ['*'], expiresAt: null, revokedAt: null, ...parts });

const ACME = head(1, 'acme', [10]);
const TOKENS: Record<string, StoredToken> = {
  all: storedToken(),
  projects: storedToken({ abilities: ['projects:read'] }),
  none: storedToken({ abilities: [] }),
  revoked: storedToken({ revokedAt: '2026-05-01T00:00:00+00:00' }),
  expiresNow: storedToken({ expiresAt: '2026-06-01T12:00:00+00:00' }),
  expiresLater: storedToken({ expiresAt: '2026-06-01T12:00:00.001+00:00' }),
  expiredWithoutAbility: storedToken({ abilities: [], expiresAt: '2020-01-01T00:00:00+00:00' }),
  outsider: storedToken({ userId: 99 }),
};

/** A stand-in for TeamReader.readAccess: the port authorize uses, over a few tokens and teams. */
class StandInReader implements Pick<TeamReader, 'readAccess'> {
  readonly calls: { tokenHash: string; teamSegment: string; signal?: AbortSignal }[] = [];
  private readonly tokens = new Map(Object.entries(TOKENS).map(([secret, token]) => [hashToken(secret), token]));
  private readonly teams = new Map([['1', ACME], ['acme', ACME]]);

  async readAccess(tokenHash: string, teamSegment: string, signal?: AbortSignal) {
    this.calls.push({ tokenHash, teamSegment, signal });
    return { token: this.tokens.get(tokenHash), head: this.teams.get(teamSegment) };
  }
}

function setUp(options: { ability?: Ability; reader?: Pick<TeamReader, 'readAccess'> } = {}) {
  const reader = options.reader ?? new StandInReader();
  const middleware = authorize({ reader: reader as TeamReader, ability: options.ability ?? 'projects:read', now: () => NOW });
  return { reader, middleware };
}

function requestWith(authorization: string | undefined, team = 'acme'): ApiRequest {
  return apiRequest({ event: apiEvent({ team, headers: authorization === undefined ? {} : { authorization } }) });
}

/** The contract error `before` throws for this request, or a failed test. */
const rejection = (middleware: ReturnType<typeof authorize>, request: ApiRequest) => thrownContractError(() => middleware.before!(request));

describe('authorize, before the handler', () => {
  it('reads the token by the SHA-256 of its secret and the team by the path segment as written, in one call with the request deadline', async () => {
    const { reader, middleware } = setUp();
    const request = requestWith('Bearer all', 'acme');
    await middleware.before!(request);
    expect((reader as StandInReader).calls).toEqual([{ tokenHash: hashToken('all'), teamSegment: 'acme', signal: request.context.deadline }]);
  });

  it('puts the team head, the token and the segment on context.access when every check passes', async () => {
    const { middleware } = setUp();
    const request = requestWith('Bearer all', '1');
    await middleware.before!(request);
    expect(request.context.access).toEqual({ head: ACME, token: TOKENS.all, teamSegment: '1' });
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

  it.each(['Basic YWxsOg==', 'Bearer', 'Bearer all extra', 'all'])('throws 401, reading nothing, when the header is %j', async (authorization) => {
    const { reader, middleware } = setUp();
    expect((await rejection(middleware, requestWith(authorization))).status).toBe(401);
    expect((reader as StandInReader).calls).toEqual([]);
  });

  it('throws 401 when the token is unknown', async () => {
    const { middleware } = setUp();
    expect((await rejection(middleware, requestWith('Bearer unknown'))).status).toBe(401);
  });

  it('throws 401 when the token is revoked', async () => {
    const { middleware } = setUp();
    expect((await rejection(middleware, requestWith('Bearer revoked'))).status).toBe(401);
  });

  it('throws 401 when the token expires at this very moment', async () => {
    const { middleware } = setUp();
    expect((await rejection(middleware, requestWith('Bearer expiresNow'))).status).toBe(401);
  });

  it('accepts a token that expires a millisecond from now', async () => {
    const { middleware } = setUp();
    const request = requestWith('Bearer expiresLater');
    await middleware.before!(request);
    expect(request.context.access?.token).toEqual(TOKENS.expiresLater);
  });

  it('throws 403 naming the route\'s ability in the message and in missing_permissions when the token lacks it', async () => {
    const { middleware } = setUp({ ability: 'finances:read' });
    const error = await rejection(middleware, requestWith('Bearer projects'));
    expect(error.status).toBe(403);
    expect(error.body).toEqual({
      message: 'This token does not have the finances:read ability.', code: 'insufficient_permission', missing_permissions: ['finances:read'],
    });
  });

  it('lets a token with exactly the route\'s ability through', async () => {
    const { middleware } = setUp({ ability: 'projects:read' });
    const request = requestWith('Bearer projects');
    await middleware.before!(request);
    expect(request.context.access?.token).toEqual(TOKENS.projects);
  });

  it.each(['finances:read', 'daemons:read', 'projects:read'] as const)('lets a * token through to %s', async (ability) => {
    const { middleware } = setUp({ ability });
    const request = requestWith('Bearer all');
    await middleware.before!(request);
    expect(request.context.access?.head).toEqual(ACME);
  });

  it('throws 401, not 403, for an expired token that also lacks the ability', async () => {
    const { middleware } = setUp();
    expect((await rejection(middleware, requestWith('Bearer expiredWithoutAbility'))).status).toBe(401);
  });

  it('throws 403, not 404, for a token without the ability asking for a team that does not exist', async () => {
    const { middleware } = setUp();
    expect((await rejection(middleware, requestWith('Bearer none', 'no-such-team'))).status).toBe(403);
  });

  it('throws 404 Not Found when the team does not exist', async () => {
    const { middleware } = setUp();
    const error = await rejection(middleware, requestWith('Bearer all', 'no-such-team'));
    expect(error.status).toBe(404);
    expect(error.body).toEqual({ message: 'Not Found' });
  });

  it('throws the same 404 when the team exists but the token\'s user is not a member', async () => {
    const { middleware } = setUp();
    const outsider = await rejection(middleware, requestWith('Bearer outsider', 'acme'));
    const unknown = await rejection(middleware, requestWith('Bearer all', 'no-such-team'));
    expect(outsider.status).toBe(404);
    expect({ body: outsider.body, headers: outsider.headers }).toEqual({ body: unknown.body, headers: unknown.headers });
  });

  it('compares an all-digit segment as written: 01 is not team 1', async () => {
    const { middleware } = setUp();
    expect((await rejection(middleware, requestWith('Bearer all', '01'))).status).toBe(404);
  });

  it('leaves context.access unset when it throws', async () => {
    const { middleware } = setUp();
    const request = requestWith('Bearer all', 'no-such-team');
    await rejection(middleware, request);
    expect(request.context.access).toBeUndefined();
  });
});

describe('authorize, on error', () => {
  it('lets a failure of the reader (DynamoDB unreachable) through unchanged, for the error handling to answer', async () => {
    const failure = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const { middleware } = setUp({ reader: { readAccess: async () => Promise.reject(failure) } });
    const request = apiRequest({ event: apiEvent({ headers: { authorization: 'Bearer all' } }), context: apiContext() });
    await expect(middleware.before!(request)).rejects.toBe(failure);
    expect(request.context.access).toBeUndefined();
  });

  it('has no after or onError step: a response or an error later in the chain passes it untouched', () => {
    const { middleware } = setUp();
    expect(middleware.after).toBeUndefined();
    expect(middleware.onError).toBeUndefined();
  });
});
