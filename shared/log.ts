import { Logger } from '@aws-lambda-powertools/logger';

/**
 * Structured logs with Powertools for AWS Lambda's Logger: JSON lines CloudWatch and Logs
 * Insights read as they are, with the Lambda context (request id, cold start) on each line.
 * The level comes from LOG_LEVEL (or POWERTOOLS_LOG_LEVEL / Lambda's own log level setting):
 * DEBUG, INFO (default), WARN, ERROR or SILENT. Callers pass only the fields they mean to log;
 * nothing here reads request headers, so no token can reach a log line.
 */
const SERVICE_NAME = 'team-resources-api';

export type { Logger };

const LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'] as const;
type Level = (typeof LEVELS)[number];

/** The configured level; an unknown one fails at start, naming the allowed values (no silent `info`). */
export function readLogLevel(env: NodeJS.ProcessEnv = process.env): Level {
  // Powertools matches level names case-sensitively; `LOG_LEVEL=silent` should work as well.
  const wanted = (env.POWERTOOLS_LOG_LEVEL || env.LOG_LEVEL || 'INFO').toUpperCase();
  if (!(LEVELS as readonly string[]).includes(wanted)) {
    throw new Error(`LOG_LEVEL must be one of ${LEVELS.map((l) => l.toLowerCase()).join(', ')} (any case), not "${env.POWERTOOLS_LOG_LEVEL || env.LOG_LEVEL}"`);
  }
  return wanted as Level;
}

export function createLogger(env: NodeJS.ProcessEnv = process.env): Logger {
  return new Logger({ serviceName: SERVICE_NAME, logLevel: readLogLevel(env) });
}
