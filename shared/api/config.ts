import { createDynamoDbClient } from '../table/dynamodb-client.ts';
import { TeamReader } from './team-reader.ts';

/**
 * Configuration, read once at start-up and failing fast: a missing TABLE_NAME stops the
 * function at cold start instead of producing `undefined` in a key at request time.
 */
export interface ApiConfig {
  tableName: string;
  /** Overrides the base of `links` and `meta.path`; otherwise derived from the request. */
  publicBaseUrl?: string;
  /** A DynamoDB-compatible endpoint instead of AWS (DynamoDB Local). */
  dynamodbEndpoint?: string;
}

export function readApiConfig(env: NodeJS.ProcessEnv = process.env): ApiConfig {
  const tableName = env.TABLE_NAME?.trim();
  if (!tableName) throw new Error('TABLE_NAME is not set');
  const publicBaseUrl = env.PUBLIC_BASE_URL?.trim().replace(/\/+$/, '') || undefined;
  if (publicBaseUrl && !/^https?:\/\/[^/\s]+(\/\S*)?$/.test(publicBaseUrl)) {
    throw new Error(`PUBLIC_BASE_URL is not an http(s) URL: ${publicBaseUrl}`);
  }
  return { tableName, publicBaseUrl, dynamodbEndpoint: env.DYNAMODB_ENDPOINT?.trim() || undefined };
}

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
