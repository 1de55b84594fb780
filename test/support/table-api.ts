import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { lambdaContext, routeRequest } from '../../commands/local/api-gateway-event.ts';
import { readApiConfig } from '../../shared/api/config.ts';
import { financesHandler, listHandler } from '../../shared/api/http/handlers.ts';
import { createDynamoDbClient } from '../../shared/table/dynamodb-client.ts';
import { TeamReader } from '../../shared/api/team-reader.ts';
import type { TestTable } from './dynamodb.ts';

type Handler = (event: unknown, context: unknown) => Promise<APIGatewayProxyStructuredResultV2>;

export interface TableAnswer {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/** The three functions' handlers over one table, each built as its function builds it (a warm function each). */
export function apiHandlers(client: DynamoDBClient, tableName: string): Record<string, Handler> {
  const runtime = { config: readApiConfig({ TABLE_NAME: tableName }), reader: new TeamReader(client, { tableName }) };
  return {
    projects: listHandler('projects', runtime) as unknown as Handler,
    daemons: listHandler('daemons', runtime) as unknown as Handler,
    finances: financesHandler(runtime) as unknown as Handler,
  };
}

/** A GET as API Gateway routes it: the function it goes to, and its event. */
export function routedGet(target: string, options: { token?: string; ifNoneMatch?: string } = {}) {
  const rawHeaders = ['Host', 'api.example.com'];
  if (options.token !== undefined) rawHeaders.push('Authorization', `Bearer ${options.token}`);
  if (options.ifNoneMatch !== undefined) rawHeaders.push('If-None-Match', options.ifNoneMatch);
  const routed = routeRequest({ method: 'GET', target, rawHeaders, sourceIp: '127.0.0.1' });
  if (!routed.route) throw new Error(`no route for ${target}`);
  return { name: routed.route.name, event: routed.event };
}

/**
 * The real handlers (the functions' own chains) over one test table, in this process, as warm
 * functions: a test file may read several tables at once (the local server serves one, from the
 * environment). Requests are routed as API Gateway routes them.
 */
export function tableApi(table: TestTable) {
  // The functions' access lines are not what these tests read.
  process.env.LOG_LEVEL = 'SILENT';
  const client = createDynamoDbClient({ endpoint: table.endpoint, requestTimeoutMs: 10_000 });
  const handlers = apiHandlers(client, table.tableName);
  return {
    async get(target: string, options: { token?: string; ifNoneMatch?: string } = {}): Promise<TableAnswer> {
      const { name, event } = routedGet(target, options);
      const result = await handlers[name]!(event, lambdaContext(name, 10_000, 'test'));
      return {
        status: result.statusCode!,
        headers: (result.headers ?? {}) as Record<string, string>,
        body: result.body ? JSON.parse(result.body) : undefined,
      };
    },
  };
}
