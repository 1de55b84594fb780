import type { MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';

const LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'] as const;
type Level = (typeof LEVELS)[number];

/** The configured level; an unknown one fails at start, naming the allowed values, rather than logging at a level nobody chose. */
export function readLogLevel(env: NodeJS.ProcessEnv = process.env): Level {
  const given = env.LOG_LEVEL || 'INFO';
  const wanted = given.toUpperCase();
  if (!(LEVELS as readonly string[]).includes(wanted)) {
    throw new Error(`LOG_LEVEL must be one of ${LEVELS.map((l) => l.toLowerCase()).join(', ')} (any case), not "${given}"`);
  }
  return wanted as Level;
}

/**
 * Structured logs: one JSON object per line on process.stdout, which Lambda forwards to CloudWatch
 * Logs as it is (docs/operations.md), with the fields Powertools for AWS Lambda's Logger writes
 * (level, message, timestamp, service and the Lambda context), so the access line stays one
 * embedded metric format document. Written here rather than through Powertools: its Logger was
 * most of what a function adds to the bare twin's cold start (docs/performance.md). Callers pass
 * only the fields they mean to log; nothing logs the event.
 */
export class Logger {
  private readonly threshold: number;
  private lambda: Record<string, unknown> = {};
  /**
   * Lambda names how the instance was started: only an on-demand one made its first request wait
   * on init ("Defined runtime environment variables",
   * https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html).
   */
  private coldStart = process.env.AWS_LAMBDA_INITIALIZATION_TYPE === 'on-demand';

  constructor(level: Level) {
    this.threshold = LEVELS.indexOf(level);
  }

  debug(message: string, fields?: object): void {
    this.write('DEBUG', message, fields);
  }

  info(message: string, fields?: object): void {
    this.write('INFO', message, fields);
  }

  error(message: string, fields?: object): void {
    this.write('ERROR', message, fields);
  }

  /** Middleware: the request's Lambda context (its request id, cold start, X-Ray trace) on every line until the next request. */
  lambdaContext(): MiddlewareObj<unknown, unknown, Error, Context> {
    return {
      before: ({ context }) => {
        this.lambda = {
          cold_start: this.coldStart,
          function_arn: context.invokedFunctionArn,
          function_memory_size: context.memoryLimitInMB,
          function_name: context.functionName,
          function_request_id: context.awsRequestId,
          // Lambda sets the tracing header per request (same page as above); its Root is the trace id.
          xray_trace_id: process.env._X_AMZN_TRACE_ID?.match(/Root=([^;]+)/)?.[1],
        };
        this.coldStart = false;
      },
    };
  }

  private write(level: Level, message: string, fields?: object): void {
    if (LEVELS.indexOf(level) < this.threshold) return;
    const line = { level, message, timestamp: new Date().toISOString(), service: 'team-resources-api', ...this.lambda, ...fields };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  }
}

export function createLogger(env: NodeJS.ProcessEnv = process.env): Logger {
  return new Logger(readLogLevel(env));
}
