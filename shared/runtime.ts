import { readApiConfig, type ApiConfig } from './config.ts';
import { createDynamoDbClient } from './store/dynamodb-client.ts';
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
    const client = createDynamoDbClient({
      endpoint: config.dynamodbEndpoint,
      // Two sequential calls, each at most 2 attempts of (connect 500 ms + answer 1.5 s),
      // fit well inside the function's timeout; the request deadline aborts anything later.
      connectionTimeoutMs: 500,
      requestTimeoutMs: 1_500,
      maxAttempts: 2,
    });
    shared = { config, reader: new TeamReader(client, { tableName: config.tableName }) };
  }
  return shared;
}
