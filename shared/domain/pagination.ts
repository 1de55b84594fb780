import * as v from 'valibot';

/** Pagination limits of the list endpoints (docs/contract.md, section 4). */
const PER_PAGE_DEFAULT = 20;
export const PER_PAGE_MAX = 50;
/** The largest integer a JSON number carries exactly, so `meta.current_page` can echo it. */
export const PAGE_MAX = Number.MAX_SAFE_INTEGER;

/** The two query parameters of a list: one description serves the validator and the API document. */
export const PAGINATION_PARAMETERS = [
  { name: 'per_page', description: 'Number of objects per page', minimum: 1, maximum: PER_PAGE_MAX, default: PER_PAGE_DEFAULT },
  { name: 'page', description: 'The page to retrieve', minimum: 1, maximum: PAGE_MAX, default: 1 },
] as const;

/** A query parameter that must be decimal digits within [minimum, maximum], with Laravel's wording. */
function integerParameter({ name, minimum, maximum, default: fallback }: (typeof PAGINATION_PARAMETERS)[number]) {
  const label = name.replace('_', ' ');
  return v.optional(
    v.pipe(
      v.string(),
      v.regex(/^[0-9]+$/, `The ${label} field must be an integer.`),
      // BigInt first: "99999999999999999999" must fail the maximum, not round to a float.
      v.transform((digits) => BigInt(digits)),
      v.minValue(BigInt(minimum), `The ${label} field must be at least ${minimum}.`),
      v.maxValue(BigInt(maximum), `The ${label} field must not be greater than ${maximum}.`),
      v.transform(Number),
    ),
    String(fallback),
  );
}

/** The query of a list request. Entry order is report order: per_page before page. */
const PaginationQuery = v.object({ per_page: integerParameter(PAGINATION_PARAMETERS[0]), page: integerParameter(PAGINATION_PARAMETERS[1]) });

export interface PageRequest {
  page: number;
  perPage: number;
  /** Whether the request named per_page, so links carry it too. */
  perPageGiven: boolean;
}

export type PaginationResult =
  | { ok: true; value: PageRequest }
  | { ok: false; errors: Record<string, string[]> };

/** Validates `page`/`per_page`; each field reports only the first rule it breaks, per_page first. */
export function parsePagination(query: Record<string, string | undefined> | undefined): PaginationResult {
  const result = v.safeParse(PaginationQuery, query ?? {}, { abortPipeEarly: true });
  if (result.success) {
    const { page, per_page: perPage } = result.output;
    return { ok: true, value: { page, perPage, perPageGiven: query?.per_page !== undefined } };
  }
  return { ok: false, errors: v.flatten<typeof PaginationQuery>(result.issues).nested as Record<string, string[]> };
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
    total > 0 && page <= lastPage
      ? { first: (page - 1) * perPage + 1, last: Math.min(page * perPage, total) }
      : null;
  return { currentPage: page, perPage, total, lastPage, ordinals };
}
