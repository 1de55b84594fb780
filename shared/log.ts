import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';

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

export function createLogger(env: NodeJS.ProcessEnv = process.env): Logger {
  // Powertools matches level names case-sensitively; `LOG_LEVEL=silent` should work as well.
  const wanted = (env.POWERTOOLS_LOG_LEVEL || env.LOG_LEVEL || 'INFO').toUpperCase();
  const logLevel: Level = (LEVELS as readonly string[]).includes(wanted) ? (wanted as Level) : 'INFO';
  return new Logger({ serviceName: SERVICE_NAME, logLevel });
}

/**
 * A function's logger, handed out per request with that request's Lambda context on its lines
 * (Powertools' own `addContext`: request id, cold start, function name, version, ARN, memory).
 *
 * The context is added when the request writes its first line, not before every request as
 * Powertools' injectLambdaContext middleware does: most requests write one line, their access
 * line, and that after the response has gone (middleware/access-log.ts), so the client does
 * not wait on it. A request that writes two lines (an error's cause, then its access line) adds
 * its context once, so `cold_start` is true on every line of a function's first request only.
 */
export class RequestLogger {
  private readonly log: Logger;
  private current: Context | undefined;

  constructor(log: Logger) {
    this.log = log;
  }

  /** The logger, its lines carrying this request's context. */
  of(context: Context): Logger {
    if (context !== this.current) {
      this.current = context;
      this.log.addContext(context);
    }
    return this.log;
  }
}
