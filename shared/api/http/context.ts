import type { Context } from 'aws-lambda';
import type { Logger } from '../log.ts';
import type { DatabaseUsage } from '../team-reader.ts';

/**
 * What the middlewares put on the Lambda context for the handler, typed apart: middy's `use`
 * joins a middleware's context type into the handler's. The checks and the page are the
 * handler's own steps, handed along as return values, not on the context.
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

/** For the access line, set by a data handler once checks 1 to 3 passed: the team the request resolved to. */
export interface TeamResolved {
  teamId?: number;
}

/** The context a handler is given. */
export type RequestContext = Context & Logged & Timed & TeamResolved;

export type { Context };
