import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { grants, type Ability } from '../../domain/abilities.ts';
import { pageWindow } from '../../domain/pagination.ts';
import type { ListResource } from '../../domain/resources.ts';
import { bearerNames, readBearer, type Bearer } from '../../auth/bearer.ts';
import { isExpired } from '../../auth/token.ts';
import type { RecentAccess } from '../../store/recent-access.ts';
import { isMember, type StoredToken, type TeamReader, type TeamState } from '../../store/team-reader.ts';
import type { Authorized, Context, FinanceAuthorized, QueryRead, Timed } from '../context.ts';
import { missingAbility, notFound, unauthenticated, type ContractError } from '../errors.ts';

interface AuthorizeOptions {
  reader: TeamReader;
  ability: Ability;
  now?: () => Date;
}

interface ListOptions extends AuthorizeOptions {
  resource: ListResource;
  /** The function's memory of tokens that recently passed: only they speculate. */
  recent: RecentAccess;
}

type Event = APIGatewayProxyEventV2;

/**
 * Checks 1 to 3 of the contract's order for a list: token (401), ability (403), team and
 * membership (404), on the token and the team head read together in one BatchGetItem.
 *
 * For a token that recently passed for this team (RecentAccess), the page's Query on the
 * generation last seen goes out at the same time, so a warm request waits on one round trip
 * (docs/storage.md); the handler uses it only if the head still names that generation. Never for
 * an unknown token, and never with If-None-Match, whose answer may need no Query at all.
 */
export function authorize(options: ListOptions): MiddlewareObj<Event, unknown, Error, Context & Timed & QueryRead & Authorized> {
  const { reader, recent } = options;
  return {
    before: async function authorizeRequest({ event, context }) {
      const { bearer, passKey, teamSegment } = credentials(event);
      const read = (consistent: boolean) =>
        reader.readAccess(bearer.tokenHash, teamSegment, { consistent, signal: context.signal, usage: context.usage }).then(({ token, head }) => ({ token: named(bearer, token), team: head }));
      const [access, prefetched] = await Promise.all([read(false), speculate(options, event, context, passKey, teamSegment)]);
      const { token, team } = await checked(options, access, () => read(true), () => recent.failed(passKey, teamSegment));
      recent.passed(passKey, teamSegment, team);
      context.access = { head: team, token, teamSegment, prefetched };
    },
  };
}

/** The page's Query on the generation last seen, when this request may speculate. */
function speculate({ reader, resource, recent }: ListOptions, event: Event, context: Timed & QueryRead, passKey: string, teamSegment: string) {
  const head = recent.speculation(passKey, teamSegment);
  if (!head || !context.query.ok || event.headers?.['if-none-match'] !== undefined) return undefined;
  const { ordinals } = pageWindow(head.counts[resource], context.query.value.page, context.query.value.perPage);
  return ordinals ? reader.prefetchPage(head, resource, ordinals, { signal: context.signal, usage: context.usage }) : undefined;
}

/** The same checks for finances, on the token and the team's finance item (one round trip). */
export function authorizeFinances(options: AuthorizeOptions): MiddlewareObj<Event, unknown, Error, Context & Timed & FinanceAuthorized> {
  return {
    before: async function authorizeFinanceRequest({ event, context }) {
      const { bearer, teamSegment } = credentials(event);
      const read = (consistent: boolean) =>
        options.reader.readFinanceAccess(bearer.tokenHash, teamSegment, { consistent, signal: context.signal, usage: context.usage }).then(({ token, finance }) => ({ token: named(bearer, token), team: finance }));
      const { token, team } = await checked(options, await read(false), () => read(true));
      context.access = { finance: team, token, teamSegment };
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

type Access<T> = { token?: StoredToken; team?: T };

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
  let error = failure(options, access);
  if (error?.statusCode === 404) error = failure(options, (access = await rereadStrongly()));
  if (error) {
    onFailure?.();
    throw error;
  }
  return access as { token: StoredToken; team: T };
}

function failure<T extends TeamState>(options: AuthorizeOptions, { token, team }: Access<T>): ContractError | undefined {
  // A token an unfinished import wrote is not valid yet: it answers as an unknown one.
  if (!token || token.inactive || token.revokedAt !== null || isExpired(token.expiresAt, options.now?.() ?? new Date())) return unauthenticated();
  if (!grants(token.abilities, options.ability)) return missingAbility(options.ability);
  // An unknown team and a team the user is not in look the same to the caller. Membership is
  // of the generation the team item names, so the members switch with the team's data.
  if (!team || !isMember(token, team)) return notFound();
  return undefined;
}
