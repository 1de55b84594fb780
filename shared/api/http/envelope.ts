import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { elapsedMs } from '../clock.ts';
import type { PageWindow } from '../pagination.ts';

/**
 * What a response is made of: JSON always, the list envelope (docs/contract.md, section 4) and
 * the finance body (section 5), written as text in contract order.
 */

/** Every response is JSON, errors included, whatever the Accept header says. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

export function jsonResponse(
  statusCode: number,
  body: string,
  headers: Record<string, string> = {},
): APIGatewayProxyStructuredResultV2 {
  return { statusCode, headers: { 'Content-Type': JSON_CONTENT_TYPE, ...headers }, body };
}

/**
 * The base of every link (docs/contract.md, section 4): PUBLIC_BASE_URL when configured; else the
 * request's scheme and host, and whatever precedes the route's own path in `rawPath`: the named
 * stage of an execute-api address (`/prod`), or nothing (`$default`). Behind a custom domain
 * `rawPath` carries no mapping path, which is why the stack sets PUBLIC_BASE_URL there.
 *
 * `routePath` is the route's template from shared/api/routes.ts (`/api/{team}/projects`).
 */
export function baseUrl(event: APIGatewayProxyEventV2, publicBaseUrl: string | undefined, routePath: string): string {
  if (publicBaseUrl) return publicBaseUrl;
  const { headers } = event;
  // The first scheme x-forwarded-proto names, when it is http; anything else is https.
  const scheme = headers['x-forwarded-proto']?.split(',')[0]?.trim().toLowerCase() === 'http' ? 'http' : 'https';
  return `${scheme}://${headers.host ?? event.requestContext.domainName}${basePath(event.rawPath, routePath)}`;
}

/** What precedes the route's own segments in the raw path (a stage name needs no encoding). */
export function basePath(rawPath: string, routePath: string): string {
  return rawPath
    .split('/')
    .slice(0, 1 - routePath.split('/').length)
    .join('/');
}

/** `meta.path`: the list's address without a query, with the team segment percent-encoded. */
export function listPath(base: string, teamSegment: string, resource: string): string {
  return `${base}/api/${encodeURIComponent(teamSegment)}/${resource}`;
}

interface ListEnvelopeInput {
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
  // The items go in as stored (JSON text); `served_in` is measured last, once the rest is written.
  const dataLinksMeta = `"data":[${items.join(',')}],"links":${JSON.stringify(links)},"meta":${JSON.stringify(meta)}`;
  return `{${dataLinksMeta},"results":${results},"served_in":"${elapsedMs(startedAt)}ms"}`;
}

/** The finance body: the stored fields, an empty `meta` array and `served_in`; no `links`. */
export function financeJson(storedFields: string, startedAt: number): string {
  return `{${storedFields},"meta":[],"served_in":"${elapsedMs(startedAt)}ms"}`;
}
