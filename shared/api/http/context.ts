import type { Context } from 'aws-lambda';
import type { Ordinals, PageRequest, PaginationResult } from '../pagination.ts';
import type { Logger } from '../log.ts';
import type { DatabaseUsage, StoredToken, TeamHead, TeamState } from '../team-reader.ts';

/**
 * What each middleware adds to the Lambda context, typed apart: middy's `use` joins a
 * middleware's context type into the handler's, so a handler's context says exactly which
 * middlewares ran before it (a finances handler has no `page`).
 */

/**
 * From the logger's lambdaContext, first of all: the request's own logger (its lines carry its
 * Lambda request id and cold start), and whether it is the function's cold start.
 */
export interface Logged {
  log: Logger;
  coldStart: boolean;
}

/**
 * From requestDeadline, before the request's own work: the request's clock, the signal that ends its DynamoDB
 * calls, and what they cost.
 */
export interface Timed {
  startedAt: number;
  signal: AbortSignal;
  usage: DatabaseUsage;
}

/**
 * From authorize, once checks 1 to 3 passed: the caller's token, and the team as the read made
 * for the route has it (a list's team head, or the team's finance item).
 */
export interface Authorized<T extends TeamState = TeamHead> {
  access: { team: T; token: StoredToken; teamSegment: string };
}

/** From readPageQuery, before any check: the query as parsed, not yet judged. */
export interface QueryRead {
  query: PaginationResult;
}

/**
 * From speculativePage, before authorize: the page's Query sent early on the generation this
 * function last saw, when it sent one. `earlyPage(head)` gives its items if that Query read the
 * generation `head` names, else undefined (the handler then reads the page itself).
 */
export interface Speculated {
  earlyPage?: (head: TeamHead, ordinals: Ordinals) => Promise<string[] | undefined>;
}

/** From requireValidPage, once check 4 passed. */
export interface Paged {
  page: PageRequest;
}

export type { Context };
