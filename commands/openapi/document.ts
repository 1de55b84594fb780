import { toJsonSchemaDefs } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import { PAGINATION_PARAMETERS } from '../../shared/api/pagination.ts';
import { Daemon, FinanceLineItem, Project } from '../../shared/domain/served-json.ts';
import { DOCUMENT_ROUTE, ROUTES, type Route } from '../../shared/api/routes.ts';
import * as bodies from './schemas.ts';
import { CACHE_CONTROL } from '../../shared/api/http/entity-tag.ts';

/**
 * The OpenAPI 3.1 document, generated from the route table and the valibot schemas. Committed
 * as openapi.json (`npm run openapi`), served at GET /api/openapi.json. Redocly's recommended
 * rules and Spectral's `spectral:oas` find nothing in it (test/unit/openapi-lint.test.ts).
 *
 * For code generators: every shape is one named component, and bodies refer to the components
 * (`ProjectsPage.data` items are `Project`), so a generator emits each type once; the headers the
 * API always sends are `required`; every operation and parameter a tool calls has an example.
 */

const SCHEMAS = { Project, Daemon, FinanceLineItem, ...bodies };
type SchemaName = keyof typeof SCHEMAS;

/** A header the API sends, always, on the responses that list it. */
const header = (description: string, schema: object) => ({
  description,
  required: true,
  schema: { type: 'string', ...schema },
});
const HEADERS = {
  ETag: header('Strong validator of the body without `served_in`; send it back in If-None-Match', {
    pattern: '^"[A-Za-z0-9_-]{32}"$',
  }),
  CacheControl: header('Per-user data: no shared cache keeps it, a client revalidates', { const: CACHE_CONTROL }),
  WWWAuthenticate: header('The authentication scheme: a bearer token', { const: 'Bearer' }),
  RetryAfter: header('Seconds to wait before trying again', { const: '1' }),
};

const TAGS = [
  {
    name: 'finances',
    description: "A team's costs: line items per label and currency, totals per currency, a grand total",
  },
  { name: 'daemons', description: "A team's daemons (the processes its servers run), paginated" },
  { name: 'projects', description: "A team's projects, paginated" },
  { name: 'document', description: 'This OpenAPI document' },
];

const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });

/**
 * A GET response: its description, its body (a named schema, or one given), and the headers it
 * always has, each by its name on the wire (its component is the name without dashes).
 */
function response(description: string, body?: SchemaName | object, headers: string[] = []) {
  const schema = typeof body === 'string' ? ref(body) : body;
  return {
    description,
    ...(headers.length
      ? {
          headers: Object.fromEntries(
            headers.map((name) => [name, { $ref: `#/components/headers/${name.replaceAll('-', '')}` }]),
          ),
        }
      : {}),
    ...(schema ? { content: { 'application/json': { schema } } } : {}),
  };
}

const VALIDATED = ['ETag', 'Cache-Control'];

/**
 * AWS's guide for HTTP APIs, whose pages describe the answers API Gateway gives itself
 * (docs/contract.md, section 1).
 */
const AWS_GUIDE = 'https://docs.aws.amazon.com/apigateway/latest/developerguide';

/**
 * What every operation may answer apart from its own: a 304 to a conditional GET, and what API
 * Gateway answers itself, before or instead of the function.
 */
const COMMON_RESPONSES = {
  304: response('Not Modified: If-None-Match named the current ETag; no body', undefined, VALIDATED),
  413: response(
    'Request too large: API Gateway refuses a request whose request line and headers exceed 10,240 bytes, ' +
      'or whose payload exceeds 10 MB, before the function runs; AWS does not document the status line ' +
      `or body of this refusal for HTTP APIs (${AWS_GUIDE}/http-api-quotas.html)`,
  ),
  429: response(
    "Too Many Requests: API Gateway's throttle turned the request away before the function ran; " +
      `retry at a lower rate (${AWS_GUIDE}/http-api-throttling.html)`,
    'TooManyRequests',
  ),
  500: response(
    'The function failed: {"message":"Server Error"} from the function itself; or API Gateway\'s own ' +
      '{"message":"Internal Server Error"} when the function crashed, ran past its timeout or could not be ' +
      `invoked (${AWS_GUIDE}/http-api-troubleshooting-lambda.html)`,
    {
      oneOf: [ref('ServerError'), ref('GatewayError')],
    },
  ),
};

type Operation = {
  operationId: string;
  summary: string;
  description: string;
  responses: Record<string, ReturnType<typeof response>>;
} & Record<string, unknown>;

/** A path's GET operation, and its HEAD: the same answers (status, headers, ETag) without a body. */
function getAndHead(get: Operation) {
  const responses = Object.fromEntries(
    Object.entries(get.responses).map(([status, { content: _, ...headOnly }]) => [status, headOnly]),
  );
  return {
    get,
    head: {
      ...get,
      operationId: `${get.operationId}Head`,
      summary: `${get.summary}: the headers alone (as GET, no body)`,
      description: `Answers exactly as GET would (status, headers, ETag), without a body. ${get.description}`,
      responses,
    },
  };
}

function operation(route: Route): Operation {
  const list = route.name !== 'finances';
  const Name = `${route.name[0]!.toUpperCase()}${route.name.slice(1)}`;
  return {
    operationId: `list${Name}`,
    summary: list
      ? `A page of the team's ${route.name}, ordered by id`
      : "The team's costs: line items, totals per currency and a grand total",
    description:
      `Requires a bearer token with the \`${route.ability}\` ability (or \`*\`) whose user is a member of the team. ` +
      `Checks run in this order: token (401), ability (403), team (404)${list ? ', query (422)' : ''}.`,
    tags: [route.name],
    security: [{ bearerAuth: [route.ability] }],
    'x-required-ability': route.ability,
    parameters: [
      {
        name: 'team',
        in: 'path',
        required: true,
        description: "The team's numeric id or its slug",
        schema: { type: 'string', minLength: 1 },
        example: 'acme',
      },
      ...(list
        ? PAGINATION_PARAMETERS.map((p) => ({
            name: p.name,
            in: 'query',
            required: false,
            description:
              `${p.description}: an integer as Laravel's integer rule reads it (PHP's filter_var: an ` +
              'optional sign and surrounding white space, no leading zero), ' +
              `${p.minimum} to ${p.maximum}`,
            schema: { type: 'integer', minimum: p.minimum, maximum: p.maximum, default: p.default },
            example: p.default,
          }))
        : []),
    ],
    responses: {
      200: response('OK', (list ? `${Name}Page` : Name) as SchemaName, VALIDATED),
      ...COMMON_RESPONSES,
      401: response(
        "No token, or an unknown, revoked or expired one, or a Sanctum `<id>|<secret>` whose id is not the token's",
        'Unauthenticated',
        ['WWW-Authenticate'],
      ),
      403: response(`The token lacks the ${route.ability} ability`, 'Forbidden'),
      404: response('Unknown team, or one the user is not a member of (the same answer for both)', 'NotFound'),
      ...(list ? { 422: response('per_page or page is not an integer in range', 'ValidationFailed') } : {}),
      503: response('The database is unreachable, throttled or too slow', 'ServiceUnavailable', ['Retry-After']),
    },
  };
}

const DOCUMENT_OPERATION: Operation = {
  operationId: 'getOpenApiDocument',
  summary: 'This document',
  description:
    'The OpenAPI 3.1 description of the API, as generated from its route table and schemas. ' +
    'No token needed (one sent along is ignored); it changes only with a new deployment, so revalidate with its ETag.',
  tags: ['document'],
  security: [],
  responses: {
    // Its own shape, in outline (the OpenAPI 3.1 schema describes it whole).
    200: response(
      'The OpenAPI document',
      {
        type: 'object',
        properties: { openapi: { const: '3.1.0' }, info: { type: 'object' }, paths: { type: 'object' } },
        required: ['openapi', 'info', 'paths'],
      },
      VALIDATED,
    ),
    ...COMMON_RESPONSES,
  },
};

export function buildOpenApiDocument(): Record<string, unknown> {
  const paths = Object.fromEntries(ROUTES.map((route) => [route.path, getAndHead(operation(route))]));
  paths[DOCUMENT_ROUTE.path] = getAndHead(DOCUMENT_OPERATION);
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'Team Resources API',
      version: '1.0.0',
      description: [
        "Read-only access to a team's finances, daemons and projects.",
        'Laravel-compatible pagination envelope and error bodies.',
        'HEAD answers as GET without a body;',
        'any other path, and any other method, answers 404 {"message":"Not Found"}.',
        'CORS preflight: where the stack is deployed with CORS origins, API Gateway answers OPTIONS requests',
        'with an Origin and Access-Control-Request-Method itself, with the configured Access-Control-Allow-* headers,',
        `without a route or the function (${AWS_GUIDE}/http-api-cors.html);`,
        'without CORS origins, OPTIONS is a 404 like any other method.',
      ].join(' '),
      // Who answers for the API, and its terms: set by the owners; the linters require both.
      contact: { name: 'Team Resources API maintainers (the platform team)' },
      license: { name: 'Proprietary: internal use only', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: '/', description: 'The API Gateway URL (or PUBLIC_BASE_URL)' }],
    tags: TAGS,
    paths,
    components: {
      // Each named schema refers to the others by component: ProjectsPage's items are a $ref to Project.
      schemas: toJsonSchemaDefs(SCHEMAS as Record<SchemaName, v.GenericSchema>, {
        target: 'draft-2020-12',
        errorMode: 'throw',
        overrideRef: ({ referenceId }) => `#/components/schemas/${referenceId}`,
      }),
      headers: HEADERS,
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            'A token issued by `npm run token -- create` (prefix tra_), or a Laravel Sanctum token migrated ' +
            'from the original service, sent as Sanctum accepts it: `<id>|<secret>` or the secret alone',
        },
      },
    },
  };
}
