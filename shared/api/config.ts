import { STACK_NAME_VARIABLE } from '../metrics.ts';
import { createDynamoDbClient } from '../table/dynamodb-client.ts';
import { TeamReader } from './team-reader.ts';

/**
 * Configuration, read once at start-up and failing fast: a missing TABLE_NAME stops the
 * function at cold start instead of producing `undefined` in a key at request time.
 */
interface ApiConfig {
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

/**
 * The stack's name, the value of every metric's Stack dimension (shared/metrics.ts), from the
 * STACK_NAME the stack sets: read once, when the function is built at cold start. None outside a
 * stack (the local server), whose lines then carry no Stack dimension.
 */
export function readStackName(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const name = env[STACK_NAME_VARIABLE]?.trim() || undefined;
  // CloudFormation's rule for a stack name: what is not one was not set by the stack.
  if (name !== undefined && !/^[A-Za-z][A-Za-z0-9-]{0,127}$/.test(name))
    throw new Error(`${STACK_NAME_VARIABLE} is not a CloudFormation stack name: "${name}"`);
  return name;
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
