import { isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readStackName } from '../api/config.ts';
import { readLogLevel } from '../api/log.ts';
import { STACK_NAME_VARIABLE } from '../metrics.ts';
import { checkedMappingFile, MAPPING_FILE_VARIABLE } from './deployed-mapping.ts';
import { isTimeZone } from './read/times.ts';

/**
 * The deployed sync's environment (deployed.ts), as the stack sets it (infra/sync.ts): the table,
 * the source's secret (or, for local runs and tests, SOURCE_DATABASE_URL: Secrets Manager has no
 * local emulator), the zone of the source's times without one, the log level, the stack's name, and
 * the mapping file the stack put beside the code (deployed-mapping.ts).
 */
interface DeployedSyncConfig {
  tableName: string;
  dynamodbEndpoint?: string;
  secretArn?: string;
  sourceUrl?: string;
  timezone: string;
  logLevel: ReturnType<typeof readLogLevel>;
  /** The stack's name, the Stack dimension of the metrics (STACK_NAME, set by the stack). */
  stack: string;
  /** The mapping file's contents (deployed-mapping.ts), checked; none: Laravel's default mapping. */
  mapping?: unknown;
}

/** The function's environment, checked at start-up: a missing or bad value fails the cold start, naming it. */
export function readDeployedConfig(env: NodeJS.ProcessEnv = process.env): DeployedSyncConfig {
  const text = (name: string) => env[name]?.trim() || undefined;
  const tableName = text('TABLE_NAME');
  if (!tableName) throw new Error('TABLE_NAME is not set');
  const secretArn = text('SOURCE_SECRET_ARN');
  const sourceUrl = text('SOURCE_DATABASE_URL');
  if (!secretArn && !sourceUrl) throw new Error('SOURCE_SECRET_ARN (or, locally, SOURCE_DATABASE_URL) is not set');
  const stack = readStackName(env);
  if (!stack)
    throw new Error(`${STACK_NAME_VARIABLE} is not set (the stack's name, the Stack dimension of the metrics)`);
  const timezone = text('SOURCE_TIMEZONE') ?? 'UTC';
  if (!isTimeZone(timezone)) throw new Error(`SOURCE_TIMEZONE must be a time zone such as UTC, not "${timezone}"`);
  // A relative path is the function's code's: in Lambda the bundle and the mapping file sit side by
  // side in /var/task (infra/sync-mapping.ts).
  const mappingPath = text(MAPPING_FILE_VARIABLE);
  const mapping =
    mappingPath === undefined
      ? undefined
      : checkedMappingFile(
          isAbsolute(mappingPath) ? mappingPath : fileURLToPath(new URL(mappingPath, import.meta.url)),
        );
  return {
    tableName,
    dynamodbEndpoint: text('DYNAMODB_ENDPOINT'),
    secretArn,
    sourceUrl,
    timezone,
    logLevel: readLogLevel(env),
    stack,
    ...(mapping !== undefined && { mapping }),
  };
}
