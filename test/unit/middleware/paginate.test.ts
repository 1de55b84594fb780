import { describe, expect, it } from 'vitest';
import { readPageQuery, requireValidPage } from '../../../shared/api/http/middleware/paginate.ts';
import { apiEvent, apiRequest, thrownContractError, type ApiRequest, type ThrownContractError } from '../../support/middy-request.ts';

/**
 * The pagination middlewares on their own: readPageQuery parses `per_page` and `page` first of
 * all (a warm request needs them to send its Query early) without judging them; requireValidPage
 * is check 4 of the contract's order (docs/contract.md, section 4), after the token and the team, a 422 with
 * Laravel's messages. Here both run one after the other, as in the chain (authorize between them).
 */
const reading = readPageQuery();
const checking = requireValidPage();
const middleware = {
  before: async (request: ApiRequest) => {
    await reading.before!(request);
    await checking.before!(request);
  },
};

const requestWith = (query?: Record<string, string>): ApiRequest => {
  const request = apiRequest({ event: apiEvent({ query }) });
  delete (request.context as Partial<ApiRequest['context']>).query;
  return request;
};

/** The 422 `before` throws for this query (and context.page left unset), or a failed test. */
async function validationError(query: Record<string, string>): Promise<ThrownContractError> {
  const request = requestWith(query);
  const error = await thrownContractError(() => middleware.before!(request));
  expect(error.status).toBe(422);
  expect(request.context.page).toBeUndefined();
  return error;
}

describe('readPageQuery, first of all', () => {
  it('never throws, even for a query check 4 refuses: a 422 must come after 401, 403 and 404', async () => {
    const request = requestWith({ per_page: '51', page: 'x' });
    await reading.before!(request);
    expect(request.context.query.ok).toBe(false);
    expect(request.context.page).toBeUndefined();
  });
});

describe('paginate, before the handler', () => {
  it('puts page 1 of 20, per_page not given, on context.page when the query is empty', async () => {
    const request = requestWith();
    await middleware.before!(request);
    expect(request.context.page).toEqual({ page: 1, perPage: 20, perPageGiven: false });
  });

  it('reads per_page and page, and notes that per_page was given (links then carry it)', async () => {
    const request = requestWith({ per_page: '50', page: '3' });
    await middleware.before!(request);
    expect(request.context.page).toEqual({ page: 3, perPage: 50, perPageGiven: true });
  });

  it("reads integers as Laravel's integer rule does: a plus sign and white space", async () => {
    const request = requestWith({ per_page: '+7', page: ' 9007199254740991 ' });
    await middleware.before!(request);
    expect(request.context.page).toEqual({ page: 9_007_199_254_740_991, perPage: 7, perPageGiven: true });
  });

  it('ignores other query parameters', async () => {
    const request = requestWith({ page: '2', sort: 'name', per_pages: 'x' });
    await middleware.before!(request);
    expect(request.context.page).toEqual({ page: 2, perPage: 20, perPageGiven: false });
  });

  it('throws 422 when per_page is 51', async () => {
    expect((await validationError({ per_page: '51' })).body).toEqual({
      message: 'The per page field must not be greater than 50.',
      errors: { per_page: ['The per page field must not be greater than 50.'] },
    });
  });

  it('throws 422 when per_page is 0', async () => {
    expect((await validationError({ per_page: '0' })).body.message).toBe('The per page field must be at least 1.');
  });

  it('throws 422 when page is past 9007199254740991', async () => {
    expect((await validationError({ page: '9007199254740992' })).body.message).toBe(
      'The page field must not be greater than 9007199254740991.',
    );
  });

  it.each(['', '1.0', '01', '1e3', '\f1', '1,2'])('throws 422 "must be an integer" when page is %j', async (page) => {
    expect((await validationError({ page })).body.message).toBe('The page field must be an integer.');
  });

  it('reports both fields, per_page first, with "(and 1 more error)"', async () => {
    expect((await validationError({ page: '0', per_page: 'x' })).body).toEqual({
      message: 'The per page field must be an integer. (and 1 more error)',
      errors: { per_page: ['The per page field must be an integer.'], page: ['The page field must be at least 1.'] },
    });
  });
});

describe('paginate, after the handler and on error', () => {
  it('has no after or onError step: responses and errors pass it untouched', () => {
    for (const step of [reading, checking]) {
      expect(step.after).toBeUndefined();
      expect(step.onError).toBeUndefined();
    }
  });
});
