import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { grants, type Ability } from '../../domain/abilities.ts';
import { pageWindow } from '../../domain/pagination.ts';
import type { ListResource } from '../../domain/resources.ts';
import { bearerNames, readBearer, type Bearer } from '../../auth/bearer.ts';
import { isExpired } from '../../auth/token.ts';
import type { RecentAccess } from '../../store/recent-access.ts';
import { isMember, type Prefetched, type StoredToken, type TeamReader, type TeamState } from '../../store/team-reader.ts';
import type { Authorized, Context, FinanceAuthorized, QueryRead, Timed } from '../context.ts';
import { missingAbility, notFound, unauthenticated } from '../errors.ts';

interface AuthorizeOptions {
  reader: TeamReader;
  ability: Ability;
  now?: () => Date;
}

interface ListAuthorizeOptions extends AuthorizeOptions {
  resource: ListResource;
  /** The function's memory of tokens that recently passed: only they speculate. */
  recent: RecentAccess;
}

type Event = APIGatewayProxyEventV2;
type Request<C> = { event: Event; context: C };

/**
 * Checks 1 to 3 of the contract's order for a list: token (401), ability (403), team and
 * membership (404), on the token and the team head read together in one BatchGetItem.
 *
 * For a token that recently passed for this team (RecentAccess), the page's Query on the
 * generation last seen is sent at the same time, so a warm request waits on one round trip
 * (docs/storage.md); the handler uses it only if the head still names that generation. Never for an
 * unknown token, and never with If-None-Match, whose answer may need no Query at all.
 */
export function authorize(options: ListAuthorizeOptions): MiddlewareObj<Event, unknown, Error, Context & Timed & QueryRead & Authorized> {
  return {
    before: async function authorizeRequest(request) {
      const { bearer, passKey, teamSegment } = credentials(request.event);
      const deadline = request.context.deadline;
      const read = async (consistent: boolean) => {
        const { token, head } = await options.reader.readAccess(bearer.tokenHash, teamSegment, { consistent, deadline });
        return { token: named(bearer, token), team: head };
      };
      const [access, prefetched] = await Promise.all([read(false), speculate(options, request, passKey, teamSegment)]);
      const { token, team: head } = await checked(options, access, () => read(true), () => options.recent.failed(passKey, teamSegment));
      options.recent.passed(passKey, teamSegment, head);
      request.context.access = { head, token, teamSegment, prefetched };
    },
  };
}

/** The same checks for finances, on the token and the team's finance item (one round trip). */
export function authorizeFinances(options: AuthorizeOptions): MiddlewareObj<Event, unknown, Error, Context & Timed & FinanceAuthorized> {
  return {
    before: async function authorizeFinanceRequest(request) {
      const { bearer, teamSegment } = credentials(request.event);
      const read = async (consistent: boolean) => {
        const { token, finance } = await options.reader.readFinanceAccess(bearer.tokenHash, teamSegment, { consistent, deadline: request.context.deadline });
        return { token: named(bearer, token), team: finance };
      };
      const { token, team: finance } = await checked(options, await read(false), () => read(true));
      request.context.access = { finance, token, teamSegment };
    },
  };
}

/**
 * The bearer and the team segment. `passKey` keys what the function remembers of passes: the
 * bearer as sent, its Sanctum id included, so a wrong id never speculates on a right one's pass.
 */
function credentials(event: Event): { bearer: Bearer; passKey: string; teamSegment: string } {
  const bearer = readBearer(event.headers?.authorization);
  if (bearer === undefined) throw unauthenticated();
  const passKey = bearer.sanctumId === undefined ? bearer.tokenHash : `${bearer.sanctumId}|${bearer.tokenHash}`;
  return { bearer, passKey, teamSegment: event.pathParameters?.team ?? '' };
}

/** The token found, when it is the one the bearer names (Sanctum's `<id>|` check); else none, the same 401 as an unknown token. */
const named = (bearer: Bearer, token: StoredToken | undefined) => (token && bearerNames(bearer, token.sanctumId) ? token : undefined);

/** The page's Query on the remembered generation, when this request may speculate. */
function speculate(options: ListAuthorizeOptions, request: Request<Context & Timed & QueryRead>, passKey: string, teamSegment: string): Promise<Prefetched> | undefined {
  if (request.event.headers?.['if-none-match'] !== undefined || !request.context.query.ok) return undefined;
  const head = options.recent.speculation(passKey, teamSegment);
  if (!head) return undefined;
  const { page, perPage } = request.context.query.value;
  const { ordinals } = pageWindow(head.counts[options.resource], page, perPage);
  return ordinals ? options.reader.prefetchPage(head, options.resource, ordinals, request.context.deadline) : undefined;
}

type Access<T> = { token?: StoredToken; team?: T };
type Failure = 'token' | 'ability' | 'team';

/**
 * The checks in the contract's order; returns the token and team once they all pass.
 *
 * A 404 for a valid token is confirmed on one strongly consistent read before it is answered:
 * on AWS an eventually consistent read may come from a replica that has the new head of a team
 * just imported but not yet the membership entry the import added to the token before it (or
 * not yet the team at all). Only a valid token with the ability gets that second read, so an
 * unknown token still costs exactly one.
 */
async function checked<T extends TeamState>(
  options: AuthorizeOptions, access: Access<T>, rereadStrongly: () => Promise<Access<T>>, onFailure?: () => void,
): Promise<{ token: StoredToken; team: T }> {
  let failure = failureOf(options, access);
  if (failure === 'team') {
    access = await rereadStrongly();
    failure = failureOf(options, access);
  }
  if (failure) {
    onFailure?.();
    throw failure === 'token' ? unauthenticated() : failure === 'ability' ? missingAbility(options.ability) : notFound();
  }
  return access as { token: StoredToken; team: T };
}

function failureOf<T extends TeamState>(options: AuthorizeOptions, { token, team }: Access<T>): Failure | undefined {
  const now = options.now?.() ?? new Date();
  // A token an unfinished import wrote is not valid yet: it answers as an unknown one.
  if (!token || token.inactive || token.revokedAt !== null || isExpired(token.expiresAt, now)) return 'token';
  if (!grants(token.abilities, options.ability)) return 'ability';
  // An unknown team and a team the user is not in look the same to the caller. Membership is
  // of the generation the team item names, so the members switch with the team's data.
  if (!team || !isMember(token, team)) return 'team';
  return undefined;
}
