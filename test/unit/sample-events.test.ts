import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ROUTES } from '../../shared/routes.ts';
import { SAMPLE_TOKEN, sampleEvent } from '../../commands/demo/make-sample-events.ts';

/** events/ holds what the one event builder makes (node commands/demo/make-sample-events.ts writes them). */
describe.each(ROUTES.map((r) => [r.name, r] as const))('events/%s.json', (name, route) => {
  const event = JSON.parse(readFileSync(new URL(`../../events/${name}.json`, import.meta.url), 'utf8'));

  it('is the event the local server builds for the same request', () => {
    expect(event).toEqual(sampleEvent(name));
  });

  it('is a GET of its route on the $default stage with the demo snapshot\'s sample token', () => {
    expect(event.routeKey).toBe(`GET ${route.path}`);
    expect(event.requestContext.stage).toBe('$default');
    expect(event.rawPath).toBe(route.path.replace('{team}', 'acme'));
    expect(event.headers.authorization).toBe(`Bearer ${SAMPLE_TOKEN}`);
  });
});
