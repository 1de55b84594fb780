import type { Ability } from '../table/abilities.ts';

/**
 * The API's routes (docs/contract.md, section 1): the ability a token needs for each, and the one
 * table the stack, the local server and the OpenAPI document read.
 */

/**
 * The one route table: the local server serves it and the CDK stack deploys it.
 * `name` is the function's file in functions/ and its construct id in the stack.
 */
export interface Route {
  method: 'GET';
  path: string;
  name: 'finances' | 'daemons' | 'projects';
  ability: Ability;
}

export const ROUTES: readonly Route[] = [
  { method: 'GET', path: '/api/{team}/finances', name: 'finances', ability: 'finances:read' },
  { method: 'GET', path: '/api/{team}/daemons', name: 'daemons', ability: 'daemons:read' },
  { method: 'GET', path: '/api/{team}/projects', name: 'projects', ability: 'projects:read' },
];

/**
 * The methods every served route answers: GET, and HEAD exactly as GET without a body (contract
 * section 1; shared/api/http/middleware/head.ts drops the body). Any other method is the routing 404.
 * The stack deploys a route for each, and the local server routes each.
 */
export const ROUTE_METHODS = ['GET', 'HEAD'] as const;

/** The API's OpenAPI document: no token, and a function that reads no data. */
export const DOCUMENT_ROUTE = { method: 'GET', path: '/api/openapi.json', name: 'openapi' } as const;

export type ServedRoute = Route | typeof DOCUMENT_ROUTE;
export type FunctionName = ServedRoute['name'];

/** Everything served, one function each: the data routes and the document. */
export const SERVED_ROUTES: readonly ServedRoute[] = [...ROUTES, DOCUMENT_ROUTE];

/** Whether a route's function reads the table (and so gets TABLE_NAME and read access). */
export const readsTable = (route: ServedRoute): route is Route => 'ability' in route;

/** Template metadata on each deployed function naming the route it serves, so tools can find its bundle. */
export const ROUTE_METADATA_KEY = 'team-resources:route';
