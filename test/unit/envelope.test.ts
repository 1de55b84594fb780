import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { financeFieldsJson, summarizeCosts } from '../../shared/domain/finance.ts';
import { PAGE_MAX, pageWindow } from '../../shared/api/pagination.ts';
import { basePath, baseUrl, financeJson, listEnvelopeJson, listPath } from '../../shared/api/http/envelope.ts';
import { monotonicMs } from '../../shared/api/clock.ts';

const PATH = 'https://api.example.com/api/acme/projects';
const SERVED_IN = /^\d+(\.\d{1,2})?ms$/;

/** Items of a page as stored JSON text: `{"id":n}` for each ordinal the page covers. */
function itemsOf(total: number, page: number, perPage: number): string[] {
  const { ordinals } = pageWindow(total, page, perPage);
  if (!ordinals) return [];
  return Array.from({ length: ordinals.last - ordinals.first + 1 }, (_, i) => `{"id":${ordinals.first + i}}`);
}

/** The envelope of page `page` of `total` items, parsed. */
function envelope(total: number, page: number, perPage = 20, perPageGiven = false) {
  const text = listEnvelopeJson({
    items: itemsOf(total, page, perPage),
    window: pageWindow(total, page, perPage),
    path: PATH,
    perPageGiven,
    startedAt: monotonicMs(),
  });
  return JSON.parse(text);
}

const ROUTE = '/api/{team}/projects';

/** A payload 2.0 event as API Gateway sends it: `rawPath` as the client called it, the stage named apart. */
function event(
  headers: Record<string, string>,
  {
    rawPath = '/api/acme/projects',
    stage = '$default',
    domainName = 'abc123.execute-api.eu-west-1.amazonaws.com',
  } = {},
) {
  return { headers, rawPath, requestContext: { stage, domainName } } as unknown as APIGatewayProxyEventV2;
}

describe('listEnvelopeJson', () => {
  it('writes keys in the order data, links, meta, results, served_in', () => {
    expect(Object.keys(envelope(42, 1))).toEqual(['data', 'links', 'meta', 'results', 'served_in']);
  });

  it('writes links in the order first, last, prev, next', () => {
    expect(Object.keys(envelope(42, 2).links)).toEqual(['first', 'last', 'prev', 'next']);
  });

  it('writes meta in the order current_page, from, last_page, per_page, to, total, path', () => {
    expect(Object.keys(envelope(42, 1).meta)).toEqual([
      'current_page',
      'from',
      'last_page',
      'per_page',
      'to',
      'total',
      'path',
    ]);
  });

  it('embeds the stored items verbatim, in order', () => {
    const text = listEnvelopeJson({
      items: ['{"id":1,"name":"a"}', '{"id":2,"name":"b"}'],
      window: pageWindow(2, 1, 20),
      path: PATH,
      perPageGiven: false,
      startedAt: monotonicMs(),
    });
    expect(text.startsWith('{"data":[{"id":1,"name":"a"},{"id":2,"name":"b"}],"links":')).toBe(true);
  });

  it('describes page 1 of 42 items by 20', () => {
    const body = envelope(42, 1);
    expect(body.links).toEqual({ first: `${PATH}?page=1`, last: `${PATH}?page=3`, prev: null, next: `${PATH}?page=2` });
    expect(body.meta).toEqual({ current_page: 1, from: 1, last_page: 3, per_page: 20, to: 20, total: 42, path: PATH });
    expect(body.results).toBe(20);
  });

  it('describes a middle page', () => {
    const body = envelope(42, 2);
    expect(body.links).toEqual({
      first: `${PATH}?page=1`,
      last: `${PATH}?page=3`,
      prev: `${PATH}?page=1`,
      next: `${PATH}?page=3`,
    });
    expect(body.meta).toMatchObject({ current_page: 2, from: 21, to: 40 });
  });

  it('has no next link on the last page', () => {
    const body = envelope(42, 3);
    expect(body.links).toEqual({ first: `${PATH}?page=1`, last: `${PATH}?page=3`, prev: `${PATH}?page=2`, next: null });
    expect(body.meta).toMatchObject({ current_page: 3, from: 41, to: 42 });
    expect(body.results).toBe(2);
  });

  it('answers a page past the last with no data, from and to null, prev the page before it and no next', () => {
    const body = envelope(42, 7);
    expect(body.data).toEqual([]);
    expect(body.links).toEqual({ first: `${PATH}?page=1`, last: `${PATH}?page=3`, prev: `${PATH}?page=6`, next: null });
    expect(body.meta).toEqual({
      current_page: 7,
      from: null,
      last_page: 3,
      per_page: 20,
      to: null,
      total: 42,
      path: PATH,
    });
    expect(body.results).toBe(0);
  });

  it('describes an empty list as one empty page', () => {
    const body = envelope(0, 1);
    expect(body.data).toEqual([]);
    expect(body.links).toEqual({ first: `${PATH}?page=1`, last: `${PATH}?page=1`, prev: null, next: null });
    expect(body.meta).toEqual({
      current_page: 1,
      from: null,
      last_page: 1,
      per_page: 20,
      to: null,
      total: 0,
      path: PATH,
    });
    expect(body.results).toBe(0);
  });

  it('echoes page 9007199254740991 exactly, with the page before it as prev', () => {
    const text = listEnvelopeJson({
      items: [],
      window: pageWindow(5, PAGE_MAX, 20),
      path: PATH,
      perPageGiven: false,
      startedAt: monotonicMs(),
    });
    expect(text).toContain('"current_page":9007199254740991,');
    expect(JSON.parse(text).links.prev).toBe(`${PATH}?page=9007199254740990`);
  });

  it('puts per_page before page in every link when the request gave per_page', () => {
    const body = envelope(120, 2, 50, true);
    expect(body.links).toEqual({
      first: `${PATH}?per_page=50&page=1`,
      last: `${PATH}?per_page=50&page=3`,
      prev: `${PATH}?per_page=50&page=1`,
      next: `${PATH}?per_page=50&page=3`,
    });
  });

  it('leaves per_page out of the links when the request did not give it', () => {
    const body = envelope(120, 2, 20, false);
    for (const link of [body.links.first, body.links.last, body.links.prev, body.links.next])
      expect(link).not.toContain('per_page');
  });

  it('keeps path free of any query', () => {
    expect(envelope(120, 2, 50, true).meta.path).toBe(PATH);
  });

  it('writes served_in as milliseconds with at most 2 decimals', () => {
    const text = listEnvelopeJson({
      items: [],
      window: pageWindow(0, 1, 20),
      path: PATH,
      perPageGiven: false,
      startedAt: monotonicMs() - 4.217_893,
    });
    const servedIn = JSON.parse(text).served_in;
    expect(servedIn).toMatch(SERVED_IN);
    expect(Number.parseFloat(servedIn)).toBeGreaterThanOrEqual(4.21);
  });

  it('keeps from, to, results, prev and next consistent on every page', () => {
    fc.assert(
      fc.property(
        fc.nat({ max: 500 }),
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 30 }),
        fc.boolean(),
        (total, perPage, page, given) => {
          const body = envelope(total, page, perPage, given);
          const lastPage = Math.max(Math.ceil(total / perPage), 1);
          expect(body.meta.last_page).toBe(lastPage);
          expect(body.results).toBe(body.data.length);
          if (body.results === 0) {
            expect(body.meta.from).toBeNull();
            expect(body.meta.to).toBeNull();
          } else {
            expect(body.meta.from).toBe((page - 1) * perPage + 1);
            expect(body.meta.to).toBe(body.meta.from + body.results - 1);
            expect(body.data[0].id).toBe(body.meta.from);
          }
          expect(body.links.prev === null).toBe(page === 1);
          expect(body.links.next === null).toBe(page >= lastPage);
          if (body.links.next) expect(body.links.next).toMatch(new RegExp(`[?&]page=${page + 1}$`));
          expect(body.served_in).toMatch(SERVED_IN);
        },
      ),
    );
  });
});

describe('financeJson', () => {
  it('adds an empty meta array and served_in after the finance fields, with no links', () => {
    const body = JSON.parse(financeJson(financeFieldsJson(summarizeCosts([])), monotonicMs()));
    expect(Object.keys(body)).toEqual(['data', 'totals', 'grand_total', 'results', 'meta', 'served_in']);
    expect(body.meta).toEqual([]);
    expect(body).not.toHaveProperty('links');
    expect(body.served_in).toMatch(SERVED_IN);
  });
});

describe('baseUrl', () => {
  const https = { 'x-forwarded-proto': 'https', host: 'api.example.com' };

  it('uses PUBLIC_BASE_URL when configured, whatever the request says', () => {
    const request = event(
      { 'x-forwarded-proto': 'http', host: 'internal.example' },
      { rawPath: '/prod/api/acme/projects', stage: 'prod' },
    );
    expect(baseUrl(request, 'https://api.example.com/v', ROUTE)).toBe('https://api.example.com/v');
  });

  it('derives scheme and host from x-forwarded-proto and host', () => {
    expect(baseUrl(event(https), undefined, ROUTE)).toBe('https://api.example.com');
  });

  it('starts local links with http:// when x-forwarded-proto says http', () => {
    expect(baseUrl(event({ 'x-forwarded-proto': 'http', host: '127.0.0.1:3000' }), undefined, ROUTE)).toBe(
      'http://127.0.0.1:3000',
    );
  });

  it('uses the first scheme when x-forwarded-proto lists several', () => {
    expect(baseUrl(event({ 'x-forwarded-proto': 'https, http', host: 'api.example.com' }), undefined, ROUTE)).toBe(
      'https://api.example.com',
    );
  });

  it.each(['ftp', 'javascript', 'ws', 'https:', ''])('links with https when x-forwarded-proto says %j', (proto) => {
    expect(baseUrl(event({ 'x-forwarded-proto': proto, host: 'api.example.com' }), undefined, ROUTE)).toBe(
      'https://api.example.com',
    );
  });

  it('links with https when x-forwarded-proto is missing', () => {
    expect(baseUrl(event({ host: 'api.example.com' }), undefined, ROUTE)).toBe('https://api.example.com');
  });

  it('reads the scheme whatever its case', () => {
    expect(baseUrl(event({ 'x-forwarded-proto': 'HTTP', host: '127.0.0.1:3000' }), undefined, ROUTE)).toBe(
      'http://127.0.0.1:3000',
    );
  });

  it('falls back to the domain name of the request context without a host header', () => {
    expect(baseUrl(event({ 'x-forwarded-proto': 'https' }, { domainName: 'api.example.com' }), undefined, ROUTE)).toBe(
      'https://api.example.com',
    );
  });

  it('adds nothing on the $default stage of the execute-api URL', () => {
    expect(baseUrl(event(https, { rawPath: '/api/acme/projects', stage: '$default' }), undefined, ROUTE)).toBe(
      'https://api.example.com',
    );
  });

  it('keeps a named stage that is in the execute-api URL (/prod/api/...)', () => {
    const request = event(
      { 'x-forwarded-proto': 'https', host: 'abc123.execute-api.eu-west-1.amazonaws.com' },
      { rawPath: '/prod/api/acme/projects', stage: 'prod' },
    );
    expect(baseUrl(request, undefined, ROUTE)).toBe('https://abc123.execute-api.eu-west-1.amazonaws.com/prod');
  });

  it('keeps the path of an API mapping behind a custom domain (/v1 mapped to $default)', () => {
    expect(baseUrl(event(https, { rawPath: '/v1/api/acme/projects', stage: '$default' }), undefined, ROUTE)).toBe(
      'https://api.example.com/v1',
    );
  });

  it('keeps a multi-level API mapping path (/team/v2)', () => {
    expect(baseUrl(event(https, { rawPath: '/team/v2/api/acme/projects', stage: '$default' }), undefined, ROUTE)).toBe(
      'https://api.example.com/team/v2',
    );
  });

  it('adds no stage segment for a named stage mapped at a domain root (none in rawPath)', () => {
    expect(baseUrl(event(https, { rawPath: '/api/acme/projects', stage: 'prod' }), undefined, ROUTE)).toBe(
      'https://api.example.com',
    );
  });
});

describe('basePath', () => {
  it('is what precedes the route template in the raw path', () => {
    expect(basePath('/v1/api/acme/projects', ROUTE)).toBe('/v1');
    expect(basePath('/api/acme/projects', ROUTE)).toBe('');
  });
});

describe('listPath', () => {
  it('is the base, /api/, the team segment and the resource', () => {
    expect(listPath('https://api.example.com', 'acme', 'projects')).toBe('https://api.example.com/api/acme/projects');
  });

  it('keeps a numeric team segment as written', () => {
    expect(listPath('https://api.example.com', '01', 'daemons')).toBe('https://api.example.com/api/01/daemons');
  });

  it('percent-encodes the team segment', () => {
    expect(listPath('http://127.0.0.1:3000', 'café bar', 'projects')).toBe(
      'http://127.0.0.1:3000/api/caf%C3%A9%20bar/projects',
    );
  });

  it('percent-encodes characters that would change the address', () => {
    expect(listPath('http://h', 'a?b#c%', 'projects')).toBe('http://h/api/a%3Fb%23c%25/projects');
  });
});
