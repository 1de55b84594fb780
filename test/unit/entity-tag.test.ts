import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { pageWindow } from '../../shared/api/pagination.ts';
import type { TeamHead } from '../../shared/api/team-reader.ts';
import {
  CACHE_CONTROL,
  conditionalJson,
  entityTag,
  listEntityTag,
  matchesIfNoneMatch,
} from '../../shared/api/http/entity-tag.ts';

/**
 * ETags derived from what decides a body (shared/api/http/entity-tag.ts): the same inputs give the
 * same tag, and each input that changes the body changes the tag. That the same tag means the same
 * bytes through the real handlers, and that a match is answered without the page's Query, is
 * tested against DynamoDB Local (read-cost.test.ts, conditional-get.test.ts).
 */
/** A team's projects head: generation `generation`, at list revision `revision`, 100 items. */
const team = (teamId: number, generation: string, membersGeneration = 'm1', revision = 1): TeamHead => ({
  teamId,
  membersGeneration,
  resource: 'projects',
  list: { generation, count: 100, base: 100, revision, entries: [] },
});
const TEAM = team(1, 'g2');
const PATH = 'https://api.example.com/api/acme/projects';
const tag = (
  overrides: {
    team?: typeof TEAM;
    resource?: 'projects' | 'daemons';
    page?: number;
    perPage?: number;
    perPageGiven?: boolean;
    path?: string;
  } = {},
) =>
  listEntityTag(
    overrides.team ?? TEAM,
    overrides.resource ?? 'projects',
    pageWindow(100, overrides.page ?? 2, overrides.perPage ?? 20),
    overrides.perPageGiven ?? false,
    overrides.path ?? PATH,
  );

describe('entity tags', () => {
  it('are strong, quoted, 32 base64url characters', () => {
    for (const t of [tag(), entityTag('fixed', '{}')]) expect(t).toMatch(/^"[A-Za-z0-9_-]{32}"$/);
  });

  it('are the same for the same list page of the same generation', () => {
    expect(tag()).toBe(tag());
  });

  // The other list has a head of its own (it is not in this one), so only the members' generation is left to vary.
  it("stay the same when another part of the team changes (the members' generation)", () => {
    expect(tag({ team: team(1, 'g2', 'm2') })).toBe(tag());
  });

  it.each([
    ["list's generation", { team: team(1, 'g3') }],
    // A change by the item keeps the generation and moves the list's revision.
    ["list's revision (a change by the item)", { team: team(1, 'g2', 'm1', 2) }],
    ['team', { team: team(2, 'g2') }],
    ['resource', { resource: 'daemons' as const }],
    ['page', { page: 3 }],
    ['per_page', { perPage: 10 }],
    ['whether per_page was given (the links carry it)', { perPageGiven: true }],
    ['address', { path: 'https://api.example.com/v1/api/acme/projects' }],
  ])('differ when the %s differs', (_what, overrides) => {
    expect(tag(overrides)).not.toBe(tag());
  });
});

describe('If-None-Match', () => {
  const t = tag();
  it.each([
    ['the tag', t],
    ['a weak form of the tag', `W/${t}`],
    ['the tag among others', `"other", ${t} , W/"third"`],
    ['*', '*'],
  ])('matches %s', (_kind, header) => {
    expect(matchesIfNoneMatch(header, t)).toBe(true);
  });

  it.each([undefined, '', '"other"', t.slice(1, -1)])('does not match %j', (header) => {
    expect(matchesIfNoneMatch(header, t)).toBe(false);
  });

  it('is read from the lower-cased header of the event', async () => {
    expect(
      (await conditionalJson({ headers: { 'if-none-match': t } } as unknown as APIGatewayProxyEventV2, t, () => '{}'))
        .statusCode,
    ).toBe(304);
  });
});

describe('responses', () => {
  const respond = (ifNoneMatch?: string) =>
    conditionalJson(
      { headers: ifNoneMatch ? { 'if-none-match': ifNoneMatch } : {} } as unknown as APIGatewayProxyEventV2,
      '"x"',
      () => '{}',
    );

  it('a 304 carries only the tag and Cache-Control, no body', async () => {
    expect(await respond('"x"')).toEqual({ statusCode: 304, headers: { ETag: '"x"', 'Cache-Control': CACHE_CONTROL } });
    expect(CACHE_CONTROL).toBe('private, no-cache');
  });

  it('a 200 carries its body, JSON, the tag and Cache-Control', async () => {
    expect(await respond()).toEqual({
      statusCode: 200,
      body: '{}',
      headers: { 'Content-Type': 'application/json; charset=utf-8', ETag: '"x"', 'Cache-Control': CACHE_CONTROL },
    });
  });
});
