import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { parsePagination } from '../../pagination.ts';
import type { Context, Paged, QueryRead } from '../context.ts';
import { validationFailed } from '../errors.ts';

/**
 * Reads `per_page` and `page` before the token is checked, without judging them yet: a warm
 * request needs the page to send its Query alongside the token's read (speculative-page.ts). A 422 is
 * check 4 and comes after 401, 403 and 404 (requireValidPage).
 */
export function readPageQuery(): MiddlewareObj<APIGatewayProxyEventV2, unknown, Error, Context & QueryRead> {
  return {
    before: function readPageParameters(request) {
      request.context.query = parsePagination(request.event.queryStringParameters);
    },
  };
}

/** Check 4: `per_page` and `page` (422 with Laravel's messages). */
export function requireValidPage(): MiddlewareObj<APIGatewayProxyEventV2, unknown, Error, Context & QueryRead & Paged> {
  return {
    before: function validatePage(request) {
      const result = request.context.query;
      if (!result.ok) throw validationFailed(result.errors);
      request.context.page = result.value;
    },
  };
}
