import { Logger } from '@aws-lambda-powertools/logger';
import type { ConstructorOptions } from '@aws-lambda-powertools/logger/types';

/**
 * Structured logs with Powertools for AWS Lambda's Logger: one JSON object per line, with the
 * Lambda context (request id, cold start) on each. The level comes from LOG_LEVEL (or
 * POWERTOOLS_LOG_LEVEL, or Lambda's own log level setting), in any case; Powertools upper-cases
 * it and ignores a name it does not know. Callers pass only the fields they mean to log.
 */
export type { Logger };

export function createLogger(env: NodeJS.ProcessEnv = process.env): Logger {
  const logLevel = (env.POWERTOOLS_LOG_LEVEL || env.LOG_LEVEL || 'INFO') as ConstructorOptions['logLevel'];
  return new Logger({ serviceName: 'team-resources-api', logLevel });
}
