import type { Context } from 'aws-lambda';
import type { PageRequest } from '../domain/pagination.ts';
import type { StoredToken, TeamHead } from '../store/team-reader.ts';

/** Per-request state the middlewares hand to the handler, typed on the Lambda context. */
export interface ApiContext extends Context {
  startedAt: number;
  /** Aborts DynamoDB calls before the function's own timeout, so a request never outlives it. */
  deadline: AbortSignal;
  access: { head: TeamHead; token: StoredToken; teamSegment: string };
  page: PageRequest;
}
