import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { bearerNames, isExpired, readBearer, type Bearer } from '../bearer.ts';
import type { PageRequest, PaginationResult } from '../pagination.ts';
import { grants, type Ability } from '../../table/abilities.ts';
import { isMember, type ReadOptions, type StoredToken, type TeamState } from '../team-reader.ts';
import { missingAbility, notFound, unauthenticated, validationFailed } from './errors.ts';

/**
 * The contract's checks (docs/contract.md, section 2), as plain steps a handler calls in order:
 * the token (401), the ability (403) and the team (404) on one read, then the query (422).
 */

/** What a request says about its caller, before anything is read: its bearer and the team segment. */
export interface Credentials {
  bearer: Bearer;
  teamSegment: string;
}

/**
 * The request's credentials, or undefined when it names no bearer (a 401). The team segment is
 * read only after a bearer, as a request without one is answered 401 whatever its path (a direct
 * invoke may pass an event without one).
 */
export function readCredentials(event: APIGatewayProxyEventV2): Credentials | undefined {
  const bearer = readBearer(event.headers?.authorization);
  return bearer && { bearer, teamSegment: event.pathParameters!.team! };
}

type Access<T> = { token?: StoredToken; team?: T };

/**
 * The one read authorize makes: the token by its hash and the route's team item by the path
 * segment, together in one BatchGetItem (TeamReader.readTokenAndHead for a list,
 * readTokenAndFinance for finances).
 */
export type AccessRead<T extends TeamState> = (
  tokenHash: string,
  teamSegment: string,
  options: ReadOptions,
) => Promise<Access<T>>;

/**
 * Checks 1 to 3: token (401), ability (403), team and membership (404), on what `read` returns.
 * Once they pass: the token, the team as the read made for the route has it (a list's team head,
 * or the team's finance item), and the segment that named it.
 */
export async function authorize<T extends TeamState>(
  credentials: Credentials | undefined,
  ability: Ability,
  read: AccessRead<T>,
  { signal, usage }: ReadOptions,
): Promise<{ team: T; token: StoredToken; teamSegment: string }> {
  if (credentials === undefined) throw unauthenticated();
  const { bearer, teamSegment } = credentials;
  const readAccess = (consistent: boolean) => read(bearer.tokenHash, teamSegment, { consistent, signal, usage });
  const { token, team } = await grantedAccess(bearer, ability, await readAccess(false), () => readAccess(true));
  return { team, token, teamSegment };
}

/** Check 4: `per_page` and `page`, read before the token, judged only now (422 with Laravel's messages). */
export function requireValidPage(query: PaginationResult): PageRequest {
  if (!query.ok) throw validationFailed(query.errors);
  return query.value;
}

/**
 * Check 1 (docs/contract.md, sections 2 and 6): the token the bearer's hash found is accepted
 * only when all of these hold. Any other answers 401, exactly as a token that does not exist.
 */
const TOKEN_CONDITIONS: readonly ((token: StoredToken, bearer: Bearer) => boolean)[] = [
  // Sanctum's `<id>|<secret>`: the token has the id the bearer names (any token, for the secret alone).
  function namedByTheBearer(token, bearer) {
    return bearerNames(bearer, token.sanctumId);
  },
  // Not written by an import that has not finished (it writes new tokens inactive until its end).
  function active(token) {
    return !token.inactive;
  },
  function notRevoked(token) {
    return token.revokedAt === null;
  },
  function notExpired(token) {
    return !isExpired(token.expiresAt, new Date());
  },
];

/**
 * The access the checks grant, in the contract's order: the token and the team once they all
 * pass, else the contract error of the first that fails.
 *
 * A 404 for a valid token is confirmed on one strongly consistent read before it is answered:
 * on AWS an eventually consistent read may come from a replica that has the new head of a team
 * just imported but not yet the membership entry the import added to the token before it (or
 * not yet the team at all). Only a valid token with the ability gets that second read, so an
 * unknown token still costs exactly one.
 */
async function grantedAccess<T extends TeamState>(
  bearer: Bearer,
  ability: Ability,
  { token, team }: Access<T>,
  rereadStrongly?: () => Promise<Access<T>>,
): Promise<Required<Access<T>>> {
  if (token === undefined || !TOKEN_CONDITIONS.every((holds) => holds(token, bearer))) throw unauthenticated();
  if (!grants(token.abilities, ability)) throw missingAbility(ability);
  // An unknown team and a team the user is not in look the same to the caller. Membership is
  // of the generation the team item names, so the members switch with the team's data.
  if (team !== undefined && isMember(token, team)) return { token, team };
  if (!rereadStrongly) throw notFound();
  return grantedAccess(bearer, ability, await rereadStrongly());
}
