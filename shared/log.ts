import { Logger } from '@aws-lambda-powertools/logger';

/**
 * Structured logs with Powertools for AWS Lambda's Logger: one JSON object per line, with the
 * Lambda context (request id, cold start) on each. The level comes from LOG_LEVEL (or
 * POWERTOOLS_LOG_LEVEL, or Lambda's own log level setting), in any case. Callers pass only the
 * fields they mean to log.
 */
export type { Logger };

const LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'] as const;
type Level = (typeof LEVELS)[number];

/** The configured level; an unknown one fails at start, naming the allowed values (Powertools would quietly use INFO). */
export function readLogLevel(env: NodeJS.ProcessEnv = process.env): Level {
  const given = env.POWERTOOLS_LOG_LEVEL || env.LOG_LEVEL || 'INFO';
  const wanted = given.toUpperCase();
  if (!(LEVELS as readonly string[]).includes(wanted)) {
    throw new Error(`LOG_LEVEL must be one of ${LEVELS.map((l) => l.toLowerCase()).join(', ')} (any case), not "${given}"`);
  }
  return wanted as Level;
}

export function createLogger(env: NodeJS.ProcessEnv = process.env): Logger {
  return new Logger({ serviceName: 'team-resources-api', logLevel: readLogLevel(env) });
}
