import { readApiConfig, type ApiConfig } from './config.ts';
import { API_CALL_BOUND_MS, API_CLIENT_LIMITS, createDynamoDbClient } from './store/dynamodb-client.ts';
import { TeamReader } from './store/team-reader.ts';

/** What a function needs at run time, built once per container at module scope. */
export interface Runtime {
  config: ApiConfig;
  reader: TeamReader;
}

let shared: Runtime | undefined;

/** The container's runtime: config read (and checked) once, one DynamoDB client reused warm. */
export function runtime(): Runtime {
  if (!shared) {
    const config = readApiConfig();
    const client = createDynamoDbClient({ endpoint: config.dynamodbEndpoint, ...API_CLIENT_LIMITS });
    shared = { config, reader: new TeamReader(client, { tableName: config.tableName, callBoundMs: API_CALL_BOUND_MS }) };
  }
  return shared;
}
