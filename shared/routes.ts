import type { Ability } from './domain/abilities.ts';

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
