import { writeFile } from 'node:fs/promises';
import { ROUTES } from '../../shared/routes.ts';
import { routeRequest } from '../local/api-gateway-event.ts';

/**
 * Writes events/<function>.json: the event API Gateway sends each function for a typical request
 * (the local server's own builder), for `npm run invoke -- <function> --event` and `sam local invoke -e`.
 * Run: node commands/demo/make-sample-events.ts
 */
export const SAMPLE_TOKEN = 'tra_local_demo_only_sample_events_token'; // in data/demo-snapshot.json
export const SAMPLE_TARGETS: Record<string, string> = {
  finances: '/api/acme/finances',
  daemons: '/api/acme/daemons?per_page=5',
  projects: '/api/acme/projects?per_page=5&page=2',
};

export function sampleEvent(name: string) {
  const headers = { Host: '127.0.0.1:3000', Accept: 'application/json', Authorization: `Bearer ${SAMPLE_TOKEN}`, 'User-Agent': 'curl/8.5.0' };
  const routed = routeRequest({ method: 'GET', target: SAMPLE_TARGETS[name]!, rawHeaders: Object.entries(headers).flat(), requestId: `sample-${name}` }, new Date('2026-11-22T10:00:00Z'));
  if (!routed.route) throw new Error(`no route for ${name}`);
  return routed.event;
}

if (import.meta.main) {
  for (const { name } of ROUTES) {
    const path = new URL(`../../events/${name}.json`, import.meta.url).pathname;
    await writeFile(path, JSON.stringify(sampleEvent(name), null, 2) + '\n');
    process.stdout.write(`wrote ${path}\n`);
  }
}
