import type { Context } from 'aws-lambda';
import type { PageRequest, PaginationResult } from '../domain/pagination.ts';
import type { DatabaseUsage, Prefetched, StoredToken, TeamFinance, TeamHead } from '../store/team-reader.ts';

/**
 * What each middleware adds to the Lambda context, typed apart: middy's `use` joins a
 * middleware's context type into the handler's, so a handler's context says exactly which
 * middlewares ran before it (a finances handler has no `page`).
 */

/** From requestDeadline, first of all: the request's clock, the signal that ends its DynamoDB calls, and what they cost. */
export interface Timed {
  startedAt: number;
  signal: AbortSignal;
  usage: DatabaseUsage;
}

/** From authorize, once checks 1 to 3 passed: the caller's token and team, and a page Query sent with them. */
export interface Authorized {
  access: { team: TeamHead; token: StoredToken; teamSegment: string; prefetched?: Prefetched };
}

/** From authorizeFinances: the same checks, on the team's finance item instead of its head. */
export interface FinanceAuthorized {
  access: { team: TeamFinance; token: StoredToken; teamSegment: string };
}

/** From readPageQuery, before any check: the query as parsed, not yet judged. */
export interface QueryRead {
  query: PaginationResult;
}

/** From requireValidPage, once check 4 passed. */
export interface Paged {
  page: PageRequest;
}

export type { Context };
