import { describe, expect, it } from 'vitest';
import { requireValidPage } from '../../shared/api/http/checks.ts';
import { parsePagination, type PageRequest } from '../../shared/api/pagination.ts';
import { thrownContractError, type ThrownContractError } from '../support/middy-request.ts';

/**
 * The query of a list on its own: parsePagination reads `per_page` and `page` first of all (a warm
 * request needs them to send its Query early) without judging them; requireValidPage is check 4
 * of the contract's order (docs/contract.md, section 4), after the token and the team, a 422 with
 * Laravel's messages. Here both run one after the other, as in the list handler (authorize between them).
 */
const validPage = (query?: Record<string, string>): PageRequest => requireValidPage(parsePagination(query));

/** The 422 requireValidPage throws for this query, or a failed test. */
async function validationError(query: Record<string, string>): Promise<ThrownContractError> {
  const error = await thrownContractError(() => validPage(query));
  expect(error.status).toBe(422);
  return error;
}

describe('parsePagination, first of all', () => {
  it('never throws, even for a query check 4 refuses: a 422 must come after 401, 403 and 404', () => {
    expect(parsePagination({ per_page: '51', page: 'x' }).ok).toBe(false);
  });
});

describe('requireValidPage', () => {
  it('gives page 1 of 20, per_page not given, when the query is empty', () => {
    expect(validPage()).toEqual({ page: 1, perPage: 20, perPageGiven: false });
  });

  it('reads per_page and page, and notes that per_page was given (links then carry it)', () => {
    expect(validPage({ per_page: '50', page: '3' })).toEqual({ page: 3, perPage: 50, perPageGiven: true });
  });

  it("reads integers as Laravel's integer rule does: a plus sign and white space", () => {
    expect(validPage({ per_page: '+7', page: ' 9007199254740991 ' })).toEqual({
      page: 9_007_199_254_740_991,
      perPage: 7,
      perPageGiven: true,
    });
  });

  it('ignores other query parameters', () => {
    expect(validPage({ page: '2', sort: 'name', per_pages: 'x' })).toEqual({
      page: 2,
      perPage: 20,
      perPageGiven: false,
    });
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
