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

/**
 * One query parameter: its default when absent; else decimal digits within [minimum, maximum],
 * or Laravel's message for the first rule it breaks. Two integers are checked by hand rather than
 * by a valibot schema: the schema's construction and first run were the largest part of what a
 * function added to the bare twin's cold start (docs/performance.md).
 */
function integerParameter(
  { name, minimum, maximum, default: fallback }: (typeof PAGINATION_PARAMETERS)[number],
  given: string | undefined,
): number | string {
  const label = name.replace('_', ' ');
  if (given === undefined) return fallback;
  if (!/^[0-9]+$/.test(given)) return `The ${label} field must be an integer.`;
  // BigInt first: "99999999999999999999" must fail the maximum, not round to a float.
  const value = BigInt(given);
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
