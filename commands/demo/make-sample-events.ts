import { writeFile } from 'node:fs/promises';
import { ROUTES } from '../../shared/routes.ts';
import { routeRequest } from '../local/api-gateway-event.ts';

/**
 * Writes events/<function>.json: the API Gateway (HTTP API, payload 2.0) event each function
 * gets for a typical request, made by the same adapter the local server uses.
 * Run: node commands/demo/make-sample-events.ts
 */
const TOKEN = 'tra_local_demo_only_sample_events_token'; // in data/demo-snapshot.json
const targets: Record<string, string> = {
  finances: '/api/acme/finances',
  daemons: '/api/acme/daemons?per_page=5',
  projects: '/api/acme/projects?per_page=5&page=2',
};
for (const route of ROUTES) {
  const routed = routeRequest({
    method: 'GET',
    target: targets[route.name]!,
    rawHeaders: ['Host', '127.0.0.1:3000', 'Accept', 'application/json', 'Authorization', `Bearer ${TOKEN}`, 'User-Agent', 'curl/8.5.0'],
    sourceIp: '127.0.0.1',
  }, new Date('2026-11-22T10:00:00Z'));
  if (!routed.route) throw new Error(`no route for ${targets[route.name]}`);
  const event = { ...routed.event, requestContext: { ...routed.event.requestContext, requestId: `sample-${route.name}` } };
  const path = new URL(`../events/${route.name}.json`, import.meta.url).pathname;
  await writeFile(path, JSON.stringify(event, null, 2) + '\n');
  process.stdout.write(`wrote ${path}\n`);
}
