import type { MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';

const LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'] as const;
type Level = (typeof LEVELS)[number];

/** The configured level; an unknown one fails at start, naming the allowed values, rather than logging at a level nobody chose. */
export function readLogLevel(env: NodeJS.ProcessEnv = process.env): Level {
  const given = env.LOG_LEVEL || 'INFO';
  const wanted = given.toUpperCase();
  if (!(LEVELS as readonly string[]).includes(wanted)) {
    throw new Error(
      `LOG_LEVEL must be one of ${LEVELS.map((l) => l.toLowerCase()).join(', ')} (any case), not "${given}"`,
    );
  }
  return wanted as Level;
}

/**
 * Structured logs: one JSON object per line on process.stdout, which Lambda forwards to CloudWatch
 * Logs as it is (docs/operations.md), with fields named as Powertools for AWS Lambda's Logger
 * names them (level, message, timestamp, service, the request id and cold start; the function's
 * name is the log group's), so the access line stays one embedded metric format document.
 * Written here rather than through Powertools: its Logger was most of what a function added to
 * the bare twin's cold start (docs/performance.md). Callers pass only the fields they mean to log;
 * nothing logs the event.
 */
export type Logger = ReturnType<typeof createLogger>;

export function createLogger(env: NodeJS.ProcessEnv = process.env) {
  const threshold = LEVELS.indexOf(readLogLevel(env));
  let lambda = {};
  // The stack provisions no concurrency: an instance's first request is the one that waited on init.
  let coldStart = true;
  const at = (level: Level) => (message: string, fields?: object) => {
    if (LEVELS.indexOf(level) < threshold) return;
    const line = {
      level,
      message,
      timestamp: new Date().toISOString(),
      service: 'team-resources-api',
      ...lambda,
      ...fields,
    };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  };
  return {
    debug: at('DEBUG'),
    info: at('INFO'),
    error: at('ERROR'),
    /** Middleware: the request's Lambda context (its request id, cold start) on every line until the next request. */
    lambdaContext: (): MiddlewareObj<unknown, unknown, Error, Context> => ({
      before: ({ context }) => {
        lambda = {
          cold_start: coldStart,
          function_request_id: context.awsRequestId,
        };
        coldStart = false;
      },
    }),
  };
}
