import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { routeRequest } from '../../commands/local/api-gateway-event.ts';
import { ROUTES } from '../../shared/api/routes.ts';

/**
 * events/ holds, for `npm run invoke` and `sam local invoke -e`, what the one event builder makes for
 * a typical request of each route, with the demo snapshot's sample token (data/demo-snapshot.json).
 * `UPDATE_EVENTS=1 npx vitest run test/unit/sample-events.test.ts` writes them anew.
 */
const SAMPLE_TOKEN = 'tra_local_demo_only_sample_events_token';
const TARGETS: Record<string, string> = {
  finances: '/api/acme/finances',
  daemons: '/api/acme/daemons?per_page=5',
  projects: '/api/acme/projects?per_page=5&page=2',
};

describe.each(ROUTES.map((r) => [r.name, r] as const))('events/%s.json', (name, route) => {
  const file = new URL(`../../events/${name}.json`, import.meta.url);
  const headers = {
    Host: '127.0.0.1:3000',
    Accept: 'application/json',
    Authorization: `Bearer ${SAMPLE_TOKEN}`,
    'User-Agent': 'curl/8.5.0',
  };
  const built = routeRequest(
    { method: 'GET', target: TARGETS[name]!, rawHeaders: Object.entries(headers).flat(), requestId: `sample-${name}` },
    new Date('2026-11-22T10:00:00Z'),
  );
  if (process.env.UPDATE_EVENTS) writeFileSync(file, `${JSON.stringify(built.route && built.event, null, 2)}\n`);
  const event = JSON.parse(readFileSync(file, 'utf8'));

  it('is the event the local server builds for the same request', () => {
    expect(event).toEqual(built.route && built.event);
  });

  it("is a GET of its route on the $default stage with the demo snapshot's sample token", () => {
    expect(event.routeKey).toBe(`GET ${route.path}`);
    expect(event.requestContext.stage).toBe('$default');
    expect(event.rawPath).toBe(route.path.replace('{team}', 'acme'));
    expect(event.headers.authorization).toBe(`Bearer ${SAMPLE_TOKEN}`);
    expect(readFileSync(new URL('../../data/demo-snapshot.json', import.meta.url), 'utf8')).toContain(
      `"token": "${SAMPLE_TOKEN}"`,
    );
  });
});
