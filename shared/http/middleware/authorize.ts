import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { grants, type Ability } from '../../domain/abilities.ts';
import { bearerToken, hashToken, isExpired } from '../../auth/token.ts';
import type { TeamReader } from '../../store/team-reader.ts';
import type { Authorized, Context, Timed } from '../context.ts';
import { missingAbility, notFound, unauthenticated } from '../errors.ts';

/**
 * Checks 1 to 3 of the contract's order: token (401), ability (403), team and membership (404).
 * The token and the team head are read together in one round trip; the checks then run in order.
 */
export function authorize(options: { reader: TeamReader; ability: Ability; now?: () => Date }): MiddlewareObj<APIGatewayProxyEventV2, unknown, Error, Context & Timed & Authorized> {
  const now = options.now ?? (() => new Date());
  return {
    before: async function authorizeRequest(request) {
      const secret = bearerToken(request.event.headers?.authorization);
      if (secret === undefined) throw unauthenticated();
      const teamSegment = request.event.pathParameters?.team ?? '';
      const { token, head } = await options.reader.readAccess(hashToken(secret), teamSegment, request.context.deadline);
      if (!token || token.revokedAt !== null || isExpired(token.expiresAt, now())) throw unauthenticated();
      if (!grants(token.abilities, options.ability)) throw missingAbility(options.ability);
      // An unknown team and a team the user is not in look the same to the caller.
      if (!head || !head.members.has(token.userId)) throw notFound();
      request.context.access = { head, token, teamSegment };
    },
  };
}
