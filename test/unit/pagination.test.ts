import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PAGE_MAX, pageWindow, parsePagination, type PageRequest } from '../../shared/api/pagination.ts';

/** The page request of a query that must be valid, or a failed test naming the errors. */
function accepted(query: Record<string, string | undefined> | undefined): PageRequest {
  const result = parsePagination(query);
  if (!result.ok)
    throw new Error(`expected ${JSON.stringify(query)} to be accepted, got ${JSON.stringify(result.errors)}`);
  return result.value;
}

function rejected(query: Record<string, string | undefined>): Record<string, string[]> {
  const result = parsePagination(query);
  if (result.ok)
    throw new Error(`expected ${JSON.stringify(query)} to be rejected, got ${JSON.stringify(result.value)}`);
  return result.errors;
}

describe('parsePagination', () => {
  describe('defaults', () => {
    it('reads page 1 of 20 when there is no query at all', () => {
      expect(accepted(undefined)).toEqual({ page: 1, perPage: 20, perPageGiven: false });
    });

    it('reads page 1 of 20 when the query is empty', () => {
      expect(accepted({})).toEqual({ page: 1, perPage: 20, perPageGiven: false });
    });

    it('ignores other query parameters', () => {
      expect(accepted({ sort: 'name', filter: 'x', page: '2' })).toEqual({ page: 2, perPage: 20, perPageGiven: false });
    });
  });

  describe('per_page', () => {
    it('accepts per_page=1', () => {
      expect(accepted({ per_page: '1' }).perPage).toBe(1);
    });

    it('accepts per_page=50', () => {
      expect(accepted({ per_page: '50' }).perPage).toBe(50);
    });

    it('remembers that the request named per_page', () => {
      expect(accepted({ per_page: '20' }).perPageGiven).toBe(true);
    });

    it('accepts a sign and surrounding white space, as PHP does: per_page=" +7 " is 7', () => {
      expect(accepted({ per_page: ' +7 ' }).perPage).toBe(7);
    });

    it('rejects leading zeros, as PHP does: per_page=007 is not an integer', () => {
      expect(rejected({ per_page: '007' })).toEqual({ per_page: ['The per page field must be an integer.'] });
    });

    it('rejects per_page=51 with "must not be greater than 50"', () => {
      expect(rejected({ per_page: '51' })).toEqual({ per_page: ['The per page field must not be greater than 50.'] });
    });

    it('rejects the largest 64-bit integer with "must not be greater than 50"', () => {
      expect(rejected({ per_page: '9223372036854775807' })).toEqual({
        per_page: ['The per page field must not be greater than 50.'],
      });
    });

    it('rejects a per_page past the 64-bit range with "must be an integer", as PHP does', () => {
      expect(rejected({ per_page: '99999999999999999999999' })).toEqual({
        per_page: ['The per page field must be an integer.'],
      });
    });

    it('rejects per_page=0 with "must be at least 1"', () => {
      expect(rejected({ per_page: '0' })).toEqual({ per_page: ['The per page field must be at least 1.'] });
    });

    it('rejects a negative per_page with "must be at least 1"', () => {
      expect(rejected({ per_page: '-1' })).toEqual({ per_page: ['The per page field must be at least 1.'] });
    });

    it.each([
      ['empty', ''],
      ['zeros', '000'],
      ['a fraction', '1.5'],
      ['a word', 'ten'],
      ['with two signs', '+-5'],
      ['with a form feed', '\f5'],
      ['in exponent notation', '1e1'],
      ['repeated (joined with a comma)', '10,20'],
    ])('rejects a per_page that is %s with "must be an integer"', (_, value) => {
      expect(rejected({ per_page: value })).toEqual({ per_page: ['The per page field must be an integer.'] });
    });
  });

  describe('page', () => {
    it('accepts page=2', () => {
      expect(accepted({ page: '2' }).page).toBe(2);
    });

    it('accepts page=9007199254740991 exactly', () => {
      expect(accepted({ page: '9007199254740991' }).page).toBe(9_007_199_254_740_991);
    });

    it('rejects page=9007199254740992 with "must not be greater than 9007199254740991"', () => {
      expect(rejected({ page: '9007199254740992' })).toEqual({
        page: ['The page field must not be greater than 9007199254740991.'],
      });
    });

    it('rejects a page of 19 digits with "must not be greater than 9007199254740991"', () => {
      expect(rejected({ page: '9'.repeat(18) })).toEqual({
        page: ['The page field must not be greater than 9007199254740991.'],
      });
    });

    it('rejects a page of 30 digits with "must be an integer": past the 64-bit range', () => {
      expect(rejected({ page: '9'.repeat(30) })).toEqual({ page: ['The page field must be an integer.'] });
    });

    it('rejects page=0 with "must be at least 1"', () => {
      expect(rejected({ page: '0' })).toEqual({ page: ['The page field must be at least 1.'] });
    });

    it('rejects a negative page with "must be at least 1"', () => {
      expect(rejected({ page: '-2' })).toEqual({ page: ['The page field must be at least 1.'] });
    });

    it.each([
      ['empty', ''],
      ['with a leading zero', '02'],
      ['a fraction', '2.0'],
      ['a word', 'last'],
      ['repeated (joined with a comma)', '1,2'],
    ])('rejects a page that is %s with "must be an integer"', (_, value) => {
      expect(rejected({ page: value })).toEqual({ page: ['The page field must be an integer.'] });
    });
  });

  describe('reporting', () => {
    it('reports one message per field: the first rule it breaks', () => {
      expect(rejected({ per_page: 'x', page: 'y' })).toEqual({
        per_page: ['The per page field must be an integer.'],
        page: ['The page field must be an integer.'],
      });
    });

    it('reports per_page before page, whatever order the query gave them in', () => {
      const errors = rejected({ page: '0', per_page: '51' });
      expect(Object.keys(errors)).toEqual(['per_page', 'page']);
    });

    it('reports a bad page alongside a valid per_page', () => {
      expect(rejected({ per_page: '10', page: '0' })).toEqual({ page: ['The page field must be at least 1.'] });
    });

    it('reads any integer within the limits as that number, with or without a plus sign and spaces', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 50 }),
          fc.integer({ min: 1, max: PAGE_MAX }),
          fc.constantFrom('', '+', ' ', ' +', '\t'),
          (perPage, page, before) => {
            const value = accepted({ per_page: `${before}${perPage}`, page: `${before}${page}` });
            expect(value).toEqual({ page, perPage, perPageGiven: true });
          },
        ),
      );
    });

    it('rejects every value with a character other than a digit, a sign or white space as not an integer', () => {
      fc.assert(
        fc.property(
          fc.string().filter((s) => /[^0-9+\- \t\n\r\v]/.test(s)),
          (value) => {
            expect(rejected({ per_page: value })).toEqual({ per_page: ['The per page field must be an integer.'] });
          },
        ),
      );
    });
  });
});

describe('pageWindow', () => {
  it('has one empty page when there is nothing', () => {
    expect(pageWindow(0, 1, 20)).toEqual({ currentPage: 1, perPage: 20, total: 0, lastPage: 1, ordinals: null });
  });

  it('reads the first 20 of 42 on page 1', () => {
    expect(pageWindow(42, 1, 20)).toEqual({
      currentPage: 1,
      perPage: 20,
      total: 42,
      lastPage: 3,
      ordinals: { first: 1, last: 20 },
    });
  });

  it('reads the last 2 of 42 on page 3 of 20', () => {
    expect(pageWindow(42, 3, 20).ordinals).toEqual({ first: 41, last: 42 });
  });

  it('has no partial page when the total divides evenly', () => {
    expect(pageWindow(40, 2, 20)).toMatchObject({ lastPage: 2, ordinals: { first: 21, last: 40 } });
  });

  it('reads nothing on a page past the last and echoes the page asked for', () => {
    expect(pageWindow(42, 4, 20)).toEqual({ currentPage: 4, perPage: 20, total: 42, lastPage: 3, ordinals: null });
  });

  it('reads nothing on page 2 of an empty list', () => {
    expect(pageWindow(0, 2, 20)).toMatchObject({ lastPage: 1, ordinals: null });
  });

  it('handles page 9007199254740991 without arithmetic beyond 2^53', () => {
    expect(pageWindow(5, PAGE_MAX, 50)).toEqual({
      currentPage: PAGE_MAX,
      perPage: 50,
      total: 5,
      lastPage: 1,
      ordinals: null,
    });
  });

  it('makes last_page max(ceil(total / per_page), 1)', () => {
    fc.assert(
      fc.property(fc.nat({ max: 100_000 }), fc.integer({ min: 1, max: 50 }), (total, perPage) => {
        expect(pageWindow(total, 1, perPage).lastPage).toBe(Math.max(Math.ceil(total / perPage), 1));
      }),
    );
  });

  it('puts every ordinal in exactly one page, pages in order, at most per_page each', () => {
    fc.assert(
      fc.property(fc.nat({ max: 2_000 }), fc.integer({ min: 1, max: 50 }), (total, perPage) => {
        const { lastPage } = pageWindow(total, 1, perPage);
        const seen: number[] = [];
        for (let page = 1; page <= lastPage + 2; page++) {
          const { ordinals } = pageWindow(total, page, perPage);
          if (page > lastPage) {
            expect(ordinals).toBeNull();
            continue;
          }
          if (ordinals === null) continue;
          expect(ordinals.last - ordinals.first + 1).toBeLessThanOrEqual(perPage);
          expect(ordinals.first).toBe((page - 1) * perPage + 1);
          for (let n = ordinals.first; n <= ordinals.last; n++) seen.push(n);
        }
        expect(seen).toEqual(Array.from({ length: total }, (_, i) => i + 1));
      }),
    );
  });

  it('never leaves a page before the last one empty', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 500 }), fc.integer({ min: 1, max: 50 }), (total, perPage) => {
        const { lastPage } = pageWindow(total, 1, perPage);
        for (let page = 1; page <= lastPage; page++) expect(pageWindow(total, page, perPage).ordinals).not.toBeNull();
      }),
    );
  });
});
