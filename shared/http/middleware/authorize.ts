import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { grants, type Ability } from '../../domain/abilities.ts';
import { bearerToken, hashToken, isExpired } from '../../auth/token.ts';
import { isMember, type StoredToken, type TeamReader, type TeamState } from '../../store/team-reader.ts';
import type { Authorized, Context, FinanceAuthorized, Timed } from '../context.ts';
import { missingAbility, notFound, unauthenticated } from '../errors.ts';

interface AuthorizeOptions {
  reader: TeamReader;
  ability: Ability;
  now?: () => Date;
}
type Event = APIGatewayProxyEventV2;

/**
 * Checks 1 to 3 of the contract's order for a list: token (401), ability (403), team and
 * membership (404). The token and the team head are read together in one round trip; the checks
 * then run in order.
 */
export function authorize(options: AuthorizeOptions): MiddlewareObj<Event, unknown, Error, Context & Timed & Authorized> {
  return {
    before: async function authorizeRequest(request) {
      const { secret, teamSegment } = credentials(request.event);
      const { token, head } = await options.reader.readAccess(hashToken(secret), teamSegment, request.context.deadline);
      request.context.access = { head: check(options, token, head), token: token!, teamSegment };
    },
  };
}

/** The same checks for finances, on the token and the team's finance item (one round trip). */
export function authorizeFinances(options: AuthorizeOptions): MiddlewareObj<Event, unknown, Error, Context & Timed & FinanceAuthorized> {
  return {
    before: async function authorizeFinanceRequest(request) {
      const { secret, teamSegment } = credentials(request.event);
      const { token, finance } = await options.reader.readFinanceAccess(hashToken(secret), teamSegment, request.context.deadline);
      request.context.access = { finance: check(options, token, finance), token: token!, teamSegment };
    },
  };
}

function credentials(event: Event): { secret: string; teamSegment: string } {
  const secret = bearerToken(event.headers?.authorization);
  if (secret === undefined) throw unauthenticated();
  return { secret, teamSegment: event.pathParameters?.team ?? '' };
}

/** The checks in the contract's order; returns the team once they all pass. */
function check<T extends TeamState>(options: AuthorizeOptions, token: StoredToken | undefined, team: T | undefined): T {
  const now = options.now?.() ?? new Date();
  // A token an unfinished import wrote is not valid yet: it answers as an unknown one.
  if (!token || token.inactive || token.revokedAt !== null || isExpired(token.expiresAt, now)) throw unauthenticated();
  if (!grants(token.abilities, options.ability)) throw missingAbility(options.ability);
  // An unknown team and a team the user is not in look the same to the caller. Membership is
  // of the generation the team item names, so the members switch with the team's data.
  if (!team || !isMember(token, team)) throw notFound();
  return team;
}
