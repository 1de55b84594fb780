/** Pagination limits of the list endpoints (docs/contract.md, section 4). */
const PER_PAGE_DEFAULT = 20;
export const PER_PAGE_MAX = 50;
/** The largest integer a JSON number carries exactly, so `meta.current_page` can echo it. */
export const PAGE_MAX = Number.MAX_SAFE_INTEGER;

/** The two query parameters of a list: one description serves the validator and the API document. */
export const PAGINATION_PARAMETERS = [
  {
    name: 'per_page',
    description: 'Number of objects per page',
    minimum: 1,
    maximum: PER_PAGE_MAX,
    default: PER_PAGE_DEFAULT,
  },
  { name: 'page', description: 'The page to retrieve', minimum: 1, maximum: PAGE_MAX, default: 1 },
] as const;

/** PHP's integers are 64-bit: past this range `filter_var` reads no integer at all. */
const PHP_INT_MIN = -(2n ** 63n);
const PHP_INT_MAX = 2n ** 63n - 1n;

/**
 * The integer Laravel's `integer` rule reads, or undefined when it reads none: PHP's
 * `filter_var($value, FILTER_VALIDATE_INT)` (docs/contract.md, section 4). Whitespace around the
 * value is ignored (space, tab, line feed, carriage return and vertical tab; not form feed), then an
 * optional sign, then `0` or digits without a leading zero, within PHP's 64-bit range. PHP's own
 * answers for a corpus of odd values are in test/unit/laravel-integer.test.ts.
 */
export function laravelInteger(given: string): bigint | undefined {
  const match = /^[ \t\n\r\v]*([+-]?)(0|[1-9][0-9]*)[ \t\n\r\v]*$/.exec(given);
  if (!match) return undefined;
  const value = BigInt(`${match[1]}${match[2]}`);
  return value < PHP_INT_MIN || value > PHP_INT_MAX ? undefined : value;
}

/**
 * One query parameter: its default when absent; else an integer as Laravel reads it, within
 * [minimum, maximum], or Laravel's message for the first rule it breaks. Two integers are checked by
 * hand rather than by a valibot schema: the schema's construction and first run were the largest part
 * of what a function added to the bare twin's cold start (docs/performance.md).
 */
function integerParameter(
  { name, minimum, maximum, default: fallback }: (typeof PAGINATION_PARAMETERS)[number],
  given: string | undefined,
): number | string {
  const label = name.replace('_', ' ');
  if (given === undefined) return fallback;
  // A bigint: "9223372036854775807" must fail the maximum, not round to a float.
  const value = laravelInteger(given);
  if (value === undefined) return `The ${label} field must be an integer.`;
  if (value < minimum) return `The ${label} field must be at least ${minimum}.`;
  if (value > maximum) return `The ${label} field must not be greater than ${maximum}.`;
  return Number(value);
}

export interface PageRequest {
  page: number;
  perPage: number;
  /** Whether the request named per_page, so links carry it too. */
  perPageGiven: boolean;
}

export type PaginationResult = { ok: true; value: PageRequest } | { ok: false; errors: Record<string, string[]> };

/** Validates `per_page` and `page`; each reports only the first rule it breaks, per_page first. */
export function parsePagination(query: Record<string, string | undefined> | undefined): PaginationResult {
  const [perPage, page] = PAGINATION_PARAMETERS.map((parameter) =>
    integerParameter(parameter, query?.[parameter.name]),
  );
  if (typeof perPage === 'number' && typeof page === 'number')
    return { ok: true, value: { page, perPage, perPageGiven: query?.per_page !== undefined } };
  const errors: Record<string, string[]> = {};
  if (typeof perPage === 'string') errors.per_page = [perPage];
  if (typeof page === 'string') errors.page = [page];
  return { ok: false, errors };
}

/** 1-based ordinals of stored items, inclusive. */
export interface Ordinals {
  first: number;
  last: number;
}

/** Which stored ordinals a page covers, and the numbers `meta` reports. */
export interface PageWindow {
  currentPage: number;
  perPage: number;
  total: number;
  lastPage: number;
  /** 1-based ordinals to read, inclusive; null when the page is empty (no read needed). */
  ordinals: Ordinals | null;
}

export function pageWindow(total: number, page: number, perPage: number): PageWindow {
  const lastPage = Math.max(Math.ceil(total / perPage), 1);
  // Past the last page nothing is read; (page - 1) * perPage could exceed 2^53 there.
  const ordinals =
    total > 0 && page <= lastPage ? { first: (page - 1) * perPage + 1, last: Math.min(page * perPage, total) } : null;
  return { currentPage: page, perPage, total, lastPage, ordinals };
}
