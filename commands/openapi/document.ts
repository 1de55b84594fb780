import { toJsonSchema } from '@valibot/to-json-schema';
import * as v from 'valibot';
import { PAGINATION_PARAMETERS } from '../../shared/domain/pagination.ts';
import { Daemon, FinanceLineItem, Project } from '../../shared/domain/resources.ts';
import { DOCUMENT_ROUTE, ROUTES, type Route } from '../../shared/routes.ts';
import * as bodies from './schemas.ts';
import { CACHE_CONTROL } from '../../shared/http/middleware/conditional-get.ts';

/**
 * The OpenAPI 3.1 document, generated from the route table and the valibot schemas. Committed
 * as openapi.json (`npm run openapi`), served at GET /api/openapi.json.
 */

const SCHEMAS = {
  Project, Daemon, FinanceLineItem,
  Links: bodies.Links, PaginationMeta: bodies.PaginationMeta,
  ProjectsPage: bodies.ProjectsPage, DaemonsPage: bodies.DaemonsPage, Finances: bodies.Finances,
  Unauthenticated: bodies.Unauthenticated, Forbidden: bodies.Forbidden, NotFound: bodies.NotFound,
  ValidationFailed: bodies.ValidationFailed, ServiceUnavailable: bodies.ServiceUnavailable, ServerError: bodies.ServerError,
};
type SchemaName = keyof typeof SCHEMAS;

const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: SchemaName) => ({ 'application/json': { schema: ref(name) } });
const header = (description: string, schema: object = { type: 'string' }) => ({ description, schema });

const LIST_BODY: Record<Route['name'], SchemaName | undefined> = { projects: 'ProjectsPage', daemons: 'DaemonsPage', finances: 'Finances' };

function operation(route: Route) {
  const list = route.name !== 'finances';
  return {
    operationId: `list${route.name[0]!.toUpperCase()}${route.name.slice(1)}`,
    summary: list ? `A page of the team's ${route.name}, ordered by id` : "The team's costs: line items, totals per currency and a grand total",
    description: `Requires a bearer token with the \`${route.ability}\` ability (or \`*\`) whose user is a member of the team. Checks run in this order: token (401), ability (403), team (404)${list ? ', query (422)' : ''}.`,
    tags: [route.name],
    security: [{ bearerAuth: [route.ability] }],
    'x-required-ability': route.ability,
    parameters: [
      { name: 'team', in: 'path', required: true, description: "The team's numeric id or its slug", schema: { type: 'string', minLength: 1 } },
      ...(list
        ? PAGINATION_PARAMETERS.map((p) => ({
            name: p.name, in: 'query', required: false, description: p.description,
            schema: { type: 'integer', minimum: p.minimum, maximum: p.maximum, default: p.default },
          }))
        : []),
    ],
    responses: {
      200: {
        description: 'OK',
        headers: {
          ETag: header('Strong validator of the body without served_in'),
          'Cache-Control': header('Per-user data', { type: 'string', const: CACHE_CONTROL }),
        },
        content: json(LIST_BODY[route.name]!),
      },
      304: { description: 'Not Modified: If-None-Match named the current ETag', headers: { ETag: header('The current validator') } },
      401: { description: 'No token, or an unknown, revoked or expired one', headers: { 'WWW-Authenticate': header('Bearer', { type: 'string', const: 'Bearer' }) }, content: json('Unauthenticated') },
      403: { description: `The token lacks the ${route.ability} ability`, content: json('Forbidden') },
      404: { description: 'Unknown team, or one the user is not a member of (the same answer for both)', content: json('NotFound') },
      ...(list ? { 422: { description: 'per_page or page is not an integer in range', content: json('ValidationFailed') } } : {}),
      500: { description: 'Server error', content: json('ServerError') },
      503: { description: 'The database is unreachable, throttled or too slow', headers: { 'Retry-After': header('Seconds', { type: 'string', const: '1' }) }, content: json('ServiceUnavailable') },
    },
  };
}

function schema(name: SchemaName): object {
  // `$schema` is the document's business (jsonSchemaDialect), not each schema's.
  const { $schema: _, ...rest } = toJsonSchema(SCHEMAS[name] as v.GenericSchema, { target: 'draft-2020-12', errorMode: 'throw' }) as Record<string, unknown>;
  return rest;
}

export function buildOpenApiDocument(): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const route of ROUTES) paths[route.path] = { get: operation(route) };
  paths[DOCUMENT_ROUTE.path] = {
    get: {
      operationId: 'getOpenApiDocument',
      summary: 'This document',
      security: [],
      responses: { 200: { description: 'The OpenAPI document', content: { 'application/json': { schema: { type: 'object' } } } } },
    },
  };
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'Team Resources API',
      version: '1.0.0',
      description: "Read-only access to a team's finances, daemons and projects. Laravel-compatible pagination envelope and error bodies. Any other path, and any method but GET, answers 404 {\"message\":\"Not Found\"}.",
    },
    servers: [{ url: '/', description: 'The API Gateway URL (or PUBLIC_BASE_URL)' }],
    paths,
    components: {
      schemas: Object.fromEntries((Object.keys(SCHEMAS) as SchemaName[]).map((name) => [name, schema(name)])),
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'A token issued by `npm run token -- create` (prefix tra_)' } },
    },
  };
}
