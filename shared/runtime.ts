import { readApiConfig, type ApiConfig } from './config.ts';
import { createDynamoDbClient } from './store/dynamodb-client.ts';
import { TeamReader } from './store/team-reader.ts';

/** What a function needs at run time, built once per container at module scope. */
export interface Runtime {
  config: ApiConfig;
  reader: TeamReader;
}

/** Config read (and checked) once, and one DynamoDB client that warm invocations reuse. */
export function runtime(): Runtime {
  const config = readApiConfig();
  const client = createDynamoDbClient({ endpoint: config.dynamodbEndpoint });
  return { config, reader: new TeamReader(client, { tableName: config.tableName }) };
}
