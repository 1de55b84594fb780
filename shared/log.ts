import type { LogAttributes } from '@aws-lambda-powertools/logger/types';
import type { Logger } from '@aws-lambda-powertools/logger';
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

/** The level LOG_LEVEL (or POWERTOOLS_LOG_LEVEL) names, in any case; INFO when unset or unknown. */
export function logLevelOf(env: NodeJS.ProcessEnv): Level {
  // Powertools matches level names case-sensitively; `LOG_LEVEL=silent` should work as well.
  const wanted = (env.POWERTOOLS_LOG_LEVEL || env.LOG_LEVEL || 'INFO').toUpperCase();
  return (LEVELS as readonly string[]).includes(wanted) ? (wanted as Level) : 'INFO';
}

/**
 * Powertools' Logger, loaded when it is first asked for: a function asks after its first answer
 * (RequestLogger), so a cold start's first request does not wait on the module and the logger's
 * construction (about 5 ms of CPU measured apart, most of what a function's import costs more
 * than a bare handler's; bench/README.md, part 3).
 */
export async function createLogger(level: Level = logLevelOf(process.env)): Promise<Logger> {
  const { Logger } = await import('@aws-lambda-powertools/logger');
  return new Logger({ serviceName: SERVICE_NAME, logLevel: level });
}

/** Lines asked for and not yet written, by every RequestLogger of the process. */
let unwritten = 0;

/**
 * Resolves once every line asked for so far is written: for a host that ends its process right
 * after a request (`npm run invoke`), where the first line may still be loading the logger.
 */
export async function linesWritten(): Promise<void> {
  while (unwritten > 0) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * A function's request log: each line carries the Lambda context of the request that wrote it
 * (Powertools' own `addContext`: request id, cold start, function name, version, ARN, memory),
 * and is written once the response has gone.
 *
 * A line is written in the event loop's check phase after the request (setImmediate). On Lambda
 * the runtime posts the handler's result to the Runtime API as soon as its promise settles, and
 * asks for the next event, before that phase: the client does not wait on the line (Powertools'
 * formatting and the write to stdout cost a warm request about a tenth of its time; bench/README.md,
 * part 4), and the runtime has not yet received another event when it is written. Lines keep
 * their order. The first one loads the logger (createLogger).
 *
 * The context is added when a request's first line is written, not before every request as
 * Powertools' injectLambdaContext middleware does, so `cold_start` is true on every line of a
 * function's first request only, however many it writes.
 */
export class RequestLogger {
  private readonly load: () => Promise<Logger>;
  private logger: Logger | Promise<Logger> | undefined;
  private current: Context | undefined;

  /** The level is the one the environment names now, when the function is built (Lambda's init). */
  constructor(load: () => Promise<Logger> = createLogger.bind(null, logLevelOf(process.env))) {
    this.load = load;
  }

  /** Writes the line after the response, with this request's context. */
  afterResponse(context: Context, level: 'info' | 'error', message: string, fields: LogAttributes): void {
    unwritten++;
    setImmediate(() => this.write(context, level, message, fields));
  }

  private write(context: Context, level: 'info' | 'error', message: string, fields: LogAttributes): void {
    this.logger ??= this.load().then((loaded) => (this.logger = loaded));
    const emit = (log: Logger) => {
      try {
        if (context !== this.current) {
          this.current = context;
          log.addContext(context);
        }
        log[level](message, fields);
      } finally {
        unwritten--;
      }
    };
    if (this.logger instanceof Promise) void this.logger.then(emit);
    else emit(this.logger);
  }
}
