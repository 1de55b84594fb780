import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { parsePagination } from '../../domain/pagination.ts';
import type { Context, Paged } from '../context.ts';
import { validationFailed } from '../errors.ts';

/** Check 4: `per_page` and `page` (422 with Laravel's messages). */
export function paginate(): MiddlewareObj<APIGatewayProxyEventV2, unknown, Error, Context & Paged> {
  return {
    before: function validatePage(request) {
      const result = parsePagination(request.event.queryStringParameters);
      if (!result.ok) throw validationFailed(result.errors);
      request.context.page = result.value;
    },
  };
}
