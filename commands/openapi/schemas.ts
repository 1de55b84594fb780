import * as v from 'valibot';
import { ABILITIES } from '../../shared/table/abilities.ts';
import { PAGE_MAX, PER_PAGE_MAX } from '../../shared/api/pagination.ts';
import { Amount, Daemon, FinanceLineItem, Project } from '../../shared/domain/served-json.ts';

/**
 * Every response body the API answers with, as valibot schemas: the single source of the
 * OpenAPI document (commands/openapi/document.ts), against which the test suite checks every response.
 */
const count = v.pipe(v.number(), v.integer(), v.minValue(0));
const ordinal = v.pipe(v.number(), v.integer(), v.minValue(1));
const url = v.pipe(v.string(), v.url());
const ServedIn = v.pipe(v.string(), v.regex(/^\d+(\.\d{1,2})?ms$/), v.description('Server-side processing time'));

export const Links = v.pipe(
  v.strictObject({ first: url, last: url, prev: v.nullable(url), next: v.nullable(url) }),
  v.description('Full addresses of pages of the same list; links carry per_page when the request did'),
);

export const PaginationMeta = v.strictObject({
  current_page: v.pipe(ordinal, v.maxValue(PAGE_MAX)),
  from: v.nullable(ordinal),
  last_page: ordinal,
  per_page: v.pipe(ordinal, v.maxValue(PER_PAGE_MAX)),
  to: v.nullable(ordinal),
  total: count,
  path: v.pipe(url, v.description('Address of the list without a query')),
});

function page<T extends v.GenericSchema>(item: T, title: string) {
  return v.pipe(
    v.strictObject({ data: v.array(item), links: Links, meta: PaginationMeta, results: count, served_in: ServedIn }),
    v.title(title),
  );
}

export const ProjectsPage = page(Project, 'ProjectsPage');
export const DaemonsPage = page(Daemon, 'DaemonsPage');

export const Finances = v.strictObject({
  data: v.array(FinanceLineItem),
  totals: v.pipe(v.record(v.pipe(v.string(), v.regex(/^[A-Z]{3}$/)), Amount), v.description('Total per currency')),
  grand_total: v.pipe(Amount, v.description('Sum of all line items')),
  results: count,
  meta: v.pipe(v.array(v.never()), v.maxLength(0), v.description('Always an empty array')),
  served_in: ServedIn,
});

export const Unauthenticated = v.strictObject({ message: v.literal('Unauthenticated.') });
export const Forbidden = v.strictObject({
  message: v.string(),
  code: v.literal('insufficient_permission'),
  missing_permissions: v.array(v.picklist(ABILITIES)),
});
export const NotFound = v.strictObject({ message: v.literal('Not Found') });
/** API Gateway's own answer when the stage's throttle turns a request away. */
export const TooManyRequests = v.strictObject({ message: v.literal('Too Many Requests') });
export const ValidationFailed = v.strictObject({
  message: v.string(),
  errors: v.strictObject({
    per_page: v.optional(v.array(v.string())),
    page: v.optional(v.array(v.string())),
  }),
});
export const ServiceUnavailable = v.strictObject({ message: v.literal('Service Unavailable') });
export const ServerError = v.strictObject({ message: v.literal('Server Error') });
/** API Gateway's own answer when the function crashed, ran past its timeout or could not be invoked. */
export const GatewayError = v.strictObject({ message: v.literal('Internal Server Error') });
