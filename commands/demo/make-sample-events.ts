import { writeFile } from 'node:fs/promises';
import { ROUTES } from '../../shared/routes.ts';
import { samHttpApiEvent } from '../local/sam-event.ts';

/**
 * Writes events/<function>.json: the event each function gets for a typical request, in the shape
 * of SAM's HttpApi template (`sam local generate-event apigateway http-api-proxy`) as
 * `sam local start-api` fills it: header names as the client wrote them. They work unchanged with
 * `sam local invoke -e` and `npm run invoke -- <function> --event`.
 * Run: node commands/demo/make-sample-events.ts
 */
const TOKEN = 'tra_local_demo_only_sample_events_token'; // in data/demo-snapshot.json
const targets: Record<string, [rawPath: string, rawQueryString: string]> = {
  finances: ['/api/acme/finances', ''],
  daemons: ['/api/acme/daemons', 'per_page=5'],
  projects: ['/api/acme/projects', 'per_page=5&page=2'],
};
for (const route of ROUTES) {
  const [rawPath, rawQueryString] = targets[route.name]!;
  const event = samHttpApiEvent({
    route,
    method: 'GET',
    rawPath,
    rawQueryString,
    headers: { Host: '127.0.0.1:3000', Accept: 'application/json', Authorization: `Bearer ${TOKEN}`, 'User-Agent': 'curl/8.5.0' },
    pathParameters: { team: 'acme' },
    requestId: `sample-${route.name}`,
    time: new Date('2026-11-22T10:00:00Z'),
  });
  const path = new URL(`../../events/${route.name}.json`, import.meta.url).pathname;
  await writeFile(path, JSON.stringify(event, null, 2) + '\n');
  process.stdout.write(`wrote ${path}\n`);
}
