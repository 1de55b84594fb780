import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { PageWindow } from '../domain/pagination.ts';
import { servedIn } from './response.ts';

/**
 * The base of every link: PUBLIC_BASE_URL when configured, else the request's own scheme and
 * host, plus the stage when API Gateway serves one that is not `$default`.
 */
export function baseUrl(event: APIGatewayProxyEventV2, publicBaseUrl: string | undefined): string {
  if (publicBaseUrl) return publicBaseUrl;
  const headers = event.headers ?? {};
  const scheme = headers['x-forwarded-proto']?.split(',')[0]?.trim() || 'https';
  const host = headers.host ?? event.requestContext?.domainName ?? 'localhost';
  const stage = event.requestContext?.stage;
  return `${scheme}://${host}${stage && stage !== '$default' ? `/${encodeURIComponent(stage)}` : ''}`;
}

/** `meta.path`: the list's address without a query, with the team segment percent-encoded. */
export function listPath(base: string, teamSegment: string, resource: string): string {
  return `${base}/api/${encodeURIComponent(teamSegment)}/${resource}`;
}

export interface ListEnvelopeInput {
  /** Each item's JSON text, as stored. */
  items: string[];
  window: PageWindow;
  path: string;
  /** Links carry per_page only when the request did, so `next` walks the same list. */
  perPageGiven: boolean;
  startedAt: number;
}

/** Laravel's paginated envelope, keys in contract order, `served_in` taken last. */
export function listEnvelopeJson({ items, window, path, perPageGiven, startedAt }: ListEnvelopeInput): string {
  const { currentPage, perPage, lastPage, total } = window;
  const link = (page: number) => (perPageGiven ? `${path}?per_page=${perPage}&page=${page}` : `${path}?page=${page}`);
  const results = items.length;
  const from = results > 0 ? (currentPage - 1) * perPage + 1 : null;
  const links = {
    first: link(1),
    last: link(lastPage),
    prev: currentPage > 1 ? link(currentPage - 1) : null,
    next: currentPage < lastPage ? link(currentPage + 1) : null,
  };
  const meta = {
    current_page: currentPage,
    from,
    last_page: lastPage,
    per_page: perPage,
    to: from === null ? null : from + results - 1,
    total,
    path,
  };
  return `{"data":[${items.join(',')}],"links":${JSON.stringify(links)},"meta":${JSON.stringify(meta)},"results":${results},"served_in":${JSON.stringify(servedIn(startedAt))}}`;
}

/** The finance body: the stored fields, an empty `meta` array and `served_in`; no `links`. */
export function financeJson(storedFields: string, startedAt: number): string {
  return `{${storedFields},"meta":[],"served_in":${JSON.stringify(servedIn(startedAt))}}`;
}
