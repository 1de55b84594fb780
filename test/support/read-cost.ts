import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { lambdaContext, routeRequest } from '../../commands/local/api-gateway-event.ts';
import { readApiConfig } from '../../shared/api/config.ts';
import { financesHandler, listHandler } from '../../shared/api/http/handlers.ts';
import { TeamReader } from '../../shared/api/team-reader.ts';
import { createDynamoDbClient } from '../../shared/table/dynamodb-client.ts';
import { callRecorder, type CallReport } from './calls.ts';

/**
 * A warm function of each kind against a table, whose every DynamoDB call is counted (docs/storage.md
 * guarantee 1): through the real handler chain, at the client's own middleware stack (calls.ts), with
 * DynamoDB Local's ConsumedCapacity for each. What it remembers between requests is its own.
 * read-cost.test.ts, and read-cost-at-size.test.ts in the `at-size` project.
 */
export interface Counted {
  status: number;
  headers: Record<string, string>;
  body: any;
  calls: CallReport[];
  /** Round trips waited on one after the other (calls in flight together count once). */
  roundTrips: number;
  rcu: number;
}

type Handler = (event: unknown, context: unknown) => Promise<APIGatewayProxyStructuredResultV2>;

/** A warm function of each kind against `tableName` at `endpoint`; each request's calls counted. */
export function countedFunctions(endpoint: string, tableName: string) {
  const client = createDynamoDbClient({
    endpoint,
    connectionTimeoutMs: 500,
    requestTimeoutMs: 10_000,
    maxAttempts: 2,
  });
  const recorder = callRecorder(client);
  const runtime = { config: readApiConfig({ TABLE_NAME: tableName }), reader: new TeamReader(client, { tableName }) };
  const handlers: Record<string, Handler> = {
    projects: listHandler('projects', runtime) as unknown as Handler,
    finances: financesHandler(runtime) as unknown as Handler,
  };
  return async function request(
    target: string,
    options: { token?: string; ifNoneMatch?: string; host?: string } = {},
  ): Promise<Counted> {
    const rawHeaders = ['Host', options.host ?? 'api.example.com'];
    if (options.token !== undefined) rawHeaders.push('Authorization', `Bearer ${options.token}`);
    if (options.ifNoneMatch !== undefined) rawHeaders.push('If-None-Match', options.ifNoneMatch);
    const routed = routeRequest({ method: 'GET', target, rawHeaders, sourceIp: '127.0.0.1' });
    if (!routed.route) throw new Error(`no route for ${target}`);
    const { result, calls: trace } = await recorder.trace(() =>
      handlers[routed.route.name]!(routed.event, lambdaContext(routed.route.name, 10_000, 'test')),
    );
    const calls = trace.calls;
    return {
      status: result.statusCode!,
      headers: (result.headers ?? {}) as Record<string, string>,
      body: result.body ? JSON.parse(result.body) : undefined,
      calls,
      roundTrips: trace.sequentialRoundTrips,
      rcu: calls.reduce((sum, c) => sum + c.readCapacity, 0),
    };
  };
}
