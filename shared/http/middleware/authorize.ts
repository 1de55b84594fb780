import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { grants, type Ability, type ListResource } from '../../routes.ts';
import { pageWindow } from '../../domain/pagination.ts';
import { bearerNames, isExpired, readBearer, type Bearer } from '../../auth/bearer.ts';
import type { RecentAccess } from '../../store/recent-access.ts';
import { isMember, type StoredToken, type TeamReader, type TeamState } from '../../store/team-reader.ts';
import type { Authorized, Context, FinanceAuthorized, QueryRead, Timed } from '../context.ts';
import { missingAbility, notFound, unauthenticated } from '../errors.ts';

type Event = APIGatewayProxyEventV2;
type Access<T> = { token?: StoredToken; team?: T };

/**
 * Checks 1 to 3 of the contract's order for a list: token (401), ability (403), team and
 * membership (404), on the token and the team head read together in one BatchGetItem.
 *
 * For a token that recently passed for this team (RecentAccess), the page's Query on the
 * generation last seen goes out at the same time, so a warm request waits on one round trip
 * (docs/storage.md); the handler uses it only if the head still names that generation. Never for
 * an unknown token, and never with If-None-Match, whose answer may need no Query at all.
 */
export function authorize({
  reader,
  ability,
  resource,
  recent,
}: {
  reader: TeamReader;
  ability: Ability;
  resource: ListResource;
  recent: RecentAccess;
}): MiddlewareObj<Event, unknown, Error, Context & Timed & QueryRead & Authorized> {
  return {
    before: async function authorizeRequest({ event, context }) {
      const { bearer, passKey, teamSegment } = credentials(event);
      const read = (consistent: boolean) =>
        reader.readAccess(bearer.tokenHash, teamSegment, { consistent, signal: context.signal, usage: context.usage });
      const speculation = recent.speculation(passKey, teamSegment);
      const { query } = context;
      const ordinals =
        speculation && query.ok && event.headers?.['if-none-match'] === undefined
          ? pageWindow(speculation.counts[resource], query.value.page, query.value.perPage).ordinals
          : null;
      const [access, prefetched] = await Promise.all([
        read(false),
        ordinals ? reader.prefetchPage(speculation!, resource, ordinals, context) : undefined,
      ]);
      try {
        const { token, team } = await checked(bearer, ability, access, () => read(true));
        recent.passed(passKey, teamSegment, team);
        context.access = { team, token, teamSegment, prefetched };
      } catch (error) {
        recent.failed(passKey, teamSegment);
        throw error;
      }
    },
  };
}

/** The same checks for finances, on the token and the team's finance item (one round trip). */
export function authorizeFinances({
  reader,
  ability,
}: {
  reader: TeamReader;
  ability: Ability;
}): MiddlewareObj<Event, unknown, Error, Context & Timed & FinanceAuthorized> {
  return {
    before: async function authorizeFinanceRequest({ event, context }) {
      const { bearer, teamSegment } = credentials(event);
      const read = (consistent: boolean) =>
        reader.readFinanceAccess(bearer.tokenHash, teamSegment, {
          consistent,
          signal: context.signal,
          usage: context.usage,
        });
      const { token, team } = await checked(bearer, ability, await read(false), () => read(true));
      context.access = { team, token, teamSegment };
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
  return { bearer, passKey, teamSegment: event.pathParameters!.team! };
}

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
  bearer: Bearer,
  ability: Ability,
  access: Access<T>,
  rereadStrongly?: () => Promise<Access<T>>,
): Promise<Required<Access<T>>> {
  const { token } = access;
  // A token the bearer does not name (Sanctum's `<id>|` check), or one an unfinished import wrote,
  // answers as an unknown one.
  if (
    !token ||
    !bearerNames(bearer, token.sanctumId) ||
    token.inactive ||
    token.revokedAt !== null ||
    isExpired(token.expiresAt, new Date())
  )
    throw unauthenticated();
  if (!grants(token.abilities, ability)) throw missingAbility(ability);
  // An unknown team and a team the user is not in look the same to the caller. Membership is
  // of the generation the team item names, so the members switch with the team's data.
  if (access.team && isMember(token, access.team)) return access as Required<Access<T>>;
  if (!rereadStrongly) throw notFound();
  return checked(bearer, ability, await rereadStrongly());
}
