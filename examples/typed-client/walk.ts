import createClient from 'openapi-fetch';
import type { components, paths } from './api.d.ts';

/**
 * A typed client of the API in a few lines: types generated from openapi.json by openapi-typescript
 * (api.d.ts beside this file), requests made by openapi-fetch, a list walked by following
 * `links.next` until it is null. Run against `npm start`, on the project's Node 24 (npx finds it in
 * node_modules; Node 20 cannot run TypeScript):
 *
 *   TOKEN=<the demo token> npx node examples/typed-client/walk.ts http://127.0.0.1:3000 acme
 */
export type Project = components['schemas']['Project'];

/** Every project of a team, in id order, one page of `perPage` after another. */
export async function* allProjects(
  baseUrl: string,
  token: string,
  team: string,
  perPage = 50,
): AsyncGenerator<Project> {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });
  let query: PageQuery | undefined = { per_page: perPage, page: 1 };
  while (query) {
    const { data, error, response } = await client.GET('/api/{team}/projects', { params: { path: { team }, query } });
    // `error` is typed by status: 401, 403, 404, 422, 429, 500 and 503 bodies all carry `message`;
    // API Gateway's refusal of a request too large (413) has no documented body.
    if (!data) throw new Error(`${response.status} ${error?.message ?? response.statusText}`);
    yield* data.data;
    query = pageOf(data.links.next);
  }
}

type PageQuery = NonNullable<paths['/api/{team}/projects']['get']['parameters']['query']>;

/**
 * The next page's query, read from `links.next` (which carries per_page and page), or undefined
 * on the last page. The link's own base (a custom domain, a stage) is the one `baseUrl` named.
 */
function pageOf(next: string | null): PageQuery | undefined {
  if (next === null) return undefined;
  const params = new URL(next).searchParams;
  return { per_page: Number(params.get('per_page') ?? undefined) || undefined, page: Number(params.get('page')) };
}

if (import.meta.main) {
  const [baseUrl = 'http://127.0.0.1:3000', team = 'acme'] = process.argv.slice(2);
  const token = process.env.TOKEN;
  if (!token) {
    process.stderr.write('usage: TOKEN=<token> npx node examples/typed-client/walk.ts [base URL] [team]\n');
    process.exit(2);
  }
  let count = 0;
  for await (const project of allProjects(baseUrl, token, team)) {
    count += 1;
    // JSON.stringify: a name is data, and must not drive the terminal.
    process.stdout.write(`${project.id}\t${project.created_at}\t${JSON.stringify(project.name)}\n`);
  }
  process.stdout.write(`${count} projects\n`);
}
