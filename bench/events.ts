import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { hashToken } from '../shared/auth/token.ts';
import { SERVED_ROUTES } from '../shared/routes.ts';
import { ordinalKey, resourcePartition, teamKeyForSegment, tokenKey } from '../shared/store/keys.ts';
import { TeamReader } from '../shared/store/team-reader.ts';
import { routeRequest } from '../commands/local/api-gateway-event.ts';
import type { BenchTeam } from './data.ts';
import type { BareEvent } from './bare-handler.ts';

/**
 * The events of the cold-start and warm parts (bench.ts, warm.ts): for each function, the API
 * Gateway event of page 2 of a team (or its finances), and for its bare twin the same DynamoDB
 * calls with the same keys (bare-handler.ts).
 */
export interface BenchEvents {
  functionEvent(name: string): unknown;
  /** Undefined for a function without DynamoDB calls (the document). `together`: as a warm function sends them. */
  bareTwin(name: string, together: boolean): BareEvent | undefined;
  /** One Query of a page: the floor of any DynamoDB handler. */
  bareOneQuery: BareEvent;
}

export async function benchEvents(doc: DynamoDBDocumentClient, tableName: string, team: BenchTeam, perPage: number): Promise<BenchEvents> {
  const head = (await new TeamReader(doc, { tableName }).readAccess(hashToken(team.secret), team.slug)).head!;
  const accessKeys = [tokenKey(hashToken(team.secret)), teamKeyForSegment(team.slug, 'head')!];
  const pageQuery = (resource: 'projects' | 'daemons') => ({
    pk: resourcePartition(head.teamId, head.generation, resource), first: ordinalKey(perPage + 1), last: ordinalKey(2 * perPage),
  });
  return {
    functionEvent(name) {
      const route = SERVED_ROUTES.find((r) => r.name === name)!;
      const query = name === 'projects' || name === 'daemons' ? `?per_page=${perPage}&page=2` : '';
      const routed = routeRequest({
        method: route.method, target: `${route.path.replace('{team}', team.slug)}${query}`, sourceIp: '127.0.0.1',
        rawHeaders: ['Host', 'api.example.com', 'Authorization', `Bearer ${team.secret}`, 'Accept', 'application/json', 'User-Agent', 'bench'],
      });
      if (!routed.route) throw new Error(`no route for ${name}`);
      return routed.event;
    },
    bareTwin(name, together) {
      if (name === 'projects' || name === 'daemons') return { batchGet: accessKeys, query: pageQuery(name), together };
      return name === 'finances' ? { batchGet: accessKeys } : undefined;
    },
    bareOneQuery: { query: pageQuery('projects') },
  };
}
