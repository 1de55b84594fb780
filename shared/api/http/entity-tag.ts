import { hash } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { PageWindow } from '../pagination.ts';
import type { ListResource } from '../../table/keys.ts';
import type { TeamHead } from '../team-reader.ts';
import { jsonResponse } from './envelope.ts';

/**
 * Conditional GETs, decided before the data is read: every 200 carries a strong ETag and
 * Cache-Control, and a request whose If-None-Match names the current tag gets 304 with no body,
 * without the page's Query. Errors are never tagged or conditional.
 *
 * A tag is derived from what decides the body, not from the body: a list's generation and revision
 * name one state of it, so (team, generation, revision) fixes a page's data, `total` and `last_page`;
 * the page, per_page (and whether the request gave it) and the list's address fix `meta` and
 * `links`. BODY_FORMAT is part of every tag: change it with the shape of a body, so
 * that a tag issued by an older deployment never matches a new one.
 */
const BODY_FORMAT = '3';

/** Per-user data: a shared cache must not keep it; a client must ask again, with its ETag. */
export const CACHE_CONTROL = 'private, no-cache';

export function entityTag(...parts: (string | number | boolean)[]): string {
  return `"${hash('sha256', `${BODY_FORMAT}${JSON.stringify(parts)}`, 'base64url').slice(0, 32)}"`;
}

/** The tag of one page of a list, as listEnvelopeJson would write it. */
export function listEntityTag(
  team: TeamHead,
  resource: ListResource,
  window: PageWindow,
  perPageGiven: boolean,
  path: string,
): string {
  return entityTag(
    'list',
    team.teamId,
    team.list.generation,
    team.list.revision,
    resource,
    window.currentPage,
    window.perPage,
    perPageGiven,
    path,
  );
}

/** If-None-Match uses the weak comparison (RFC 9110 13.1.2): W/ prefixes do not matter. */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (header?.trim() === '*') return true;
  return header?.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag) ?? false;
}

/** 304 with the tag when the request already holds it; otherwise the 200 that `body` writes, tagged. */
export async function conditionalJson(
  event: APIGatewayProxyEventV2,
  etag: string,
  body: () => string | Promise<string>,
): Promise<APIGatewayProxyStructuredResultV2> {
  const headers = { ETag: etag, 'Cache-Control': CACHE_CONTROL };
  if (matchesIfNoneMatch(event.headers?.['if-none-match'], etag)) return { statusCode: 304, headers };
  return jsonResponse(200, await body(), headers);
}
