import type { MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import type { Logged } from './http/context.ts';

const LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'] as const;
type Level = (typeof LEVELS)[number];

/**
 * The configured level; an unknown one fails at start, naming the allowed values, rather than
 * logging at a level nobody chose.
 */
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
export interface Logger {
  debug(message: string, fields?: object): void;
  info(message: string, fields?: object): void;
  error(message: string, fields?: object): void;
}

/**
 * The function's logger, and the middleware that gives each request its own (`context.log`),
 * whose lines carry that request's Lambda request id and cold start. The request's state stays on
 * the request: one function may serve requests side by side (the local server does).
 */
export function createLogger(env: NodeJS.ProcessEnv = process.env) {
  const threshold = LEVELS.indexOf(readLogLevel(env));
  const write = (level: Level, message: string, request: object | undefined, fields: object | undefined) => {
    if (LEVELS.indexOf(level) < threshold) return;
    const line = {
      level,
      message,
      timestamp: new Date().toISOString(),
      service: 'team-resources-api',
      ...request,
      ...fields,
    };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  };
  /** A logger whose every line carries `request`'s fields. */
  const logger = (request?: object): Logger => ({
    debug: (message, fields) => write('DEBUG', message, request, fields),
    info: (message, fields) => write('INFO', message, request, fields),
    error: (message, fields) => write('ERROR', message, request, fields),
  });
  // The stack provisions no concurrency: an instance's first request is the one that waited on init.
  let coldStart = true;
  return {
    ...logger(),
    /** Middleware, first of all: the request's logger and whether it is the function's cold start. */
    lambdaContext: (): MiddlewareObj<unknown, unknown, Error, Context & Logged> => ({
      before: function giveRequestItsLogger({ context }) {
        context.coldStart = coldStart;
        coldStart = false;
        context.log = logger({ cold_start: context.coldStart, function_request_id: context.awsRequestId });
      },
    }),
  };
}
