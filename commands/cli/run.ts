import { helpText, parseCommandLine, usageLines, type CommandLine, type CommandSpec } from './args.ts';
import { describeDatabaseError, EXIT, Failure, UsageError } from './errors.ts';
import { escapeText } from './text.ts';

/**
 * How every command starts and ends: the command line read against its spec (`--help` answered,
 * usage errors exit 2), the work done, and whatever goes wrong turned into one line and exit 1,
 * never a stack trace. Work that must be undone however the command ends (a server, DynamoDB
 * Local) is registered with `onExit`.
 */

export interface RunOptions {
  /**
   * The command keeps running after `main` returns (npm start), and stops everything it started
   * on SIGINT, SIGTERM and SIGHUP, or when whoever launched it (npm) is gone.
   */
  serve?: boolean;
  // Other commands keep Node's default: a signal ends them at once, and DynamoDB Local's keeper
  // (commands/local/java-keeper.ts) stops Java when it sees the command gone.
}

const cleanups: (() => unknown)[] = [];
let exiting = false;
/** Cleanups get this long, then the command exits anyway (DynamoDB Local's keeper still stops Java). */
const CLEANUP_LIMIT_MS = 15_000;

/** Runs `cleanup` when the command ends, however it ends; the last registered runs first. */
export function onExit(cleanup: () => unknown): void {
  cleanups.push(cleanup);
}

export async function runCommand(spec: CommandSpec, main: (line: CommandLine) => Promise<void>, options: RunOptions = {}): Promise<void> {
  process.on('uncaughtException', (error) => void exit(EXIT.failed, messageFor(error)));
  process.on('unhandledRejection', (error) => void exit(EXIT.failed, messageFor(error)));
  // A closed stderr must not turn every later message into another error.
  process.stderr.on('error', () => {});
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (options.serve) return; // the banner's reader went away; the API keeps serving
    void exit(EXIT.failed, error.code === 'EPIPE' ? 'stdout was closed before everything was written' : messageFor(error));
  });

  if (options.serve) {
    let firstSignalAt = 0;
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.on(signal, () => {
        // A Ctrl-C reaches node twice at once (from the terminal, and forwarded by npm): one stop.
        // A second Ctrl-C later, while stopping, stops at once (DynamoDB Local's keeper sees node go).
        if (exiting) {
          if (performance.now() - firstSignalAt > 1_000) process.exit(EXIT.failed);
          return;
        }
        firstSignalAt = performance.now();
        void exit(EXIT.done, `${signal}: stopping`);
      });
    }
    watchLauncher(() => void exit(EXIT.done, 'the process that started this one is gone: stopping'));
  }

  let line: CommandLine | undefined;
  try {
    line = parseCommandLine(spec, process.argv.slice(2));
  } catch (error) {
    if (error instanceof UsageError) return exit(EXIT.usage, usageMessage(spec, error.message));
    throw error;
  }
  if (!line) {
    process.stdout.write(helpText(spec));
    return exit(EXIT.done);
  }
  try {
    await main(line);
  } catch (error) {
    if (error instanceof UsageError) return exit(EXIT.usage, usageMessage(spec, error.message));
    return exit(EXIT.failed, messageFor(error));
  }
  if (!options.serve) return exit(EXIT.done);
}

/** The problem on one line, then how the command is used. */
function usageMessage(spec: CommandSpec, problem: string): string {
  return [`${spec.name}: ${problem}`, ...usageLines(spec), `(${spec.name} -- --help for more)`].join('\n');
}

/** One line (or the operator's own message) for anything thrown, never a stack trace. */
function messageFor(error: unknown): string {
  if (error instanceof Failure) return error.message;
  const database = describeDatabaseError(error);
  if (database) return escapeText(database);
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
    return escapeText(`failed: ${error.name === 'Error' ? '' : `${error.name}: `}${error.message}${cause}`);
  }
  return escapeText(`failed: ${String(error)}`);
}

/** Says why (if there is something to say), runs the cleanups, and exits with `code`. Once. */
async function exit(code: number, message?: string): Promise<void> {
  if (exiting) return;
  exiting = true;
  if (message) process.stderr.write(`${message}\n`);
  const limit = setTimeout(() => process.exit(code), CLEANUP_LIMIT_MS);
  for (const cleanup of cleanups.reverse()) {
    try {
      await cleanup();
    } catch (error) {
      process.stderr.write(`while stopping: ${messageFor(error)}\n`);
    }
  }
  clearTimeout(limit);
  // Output to a pipe may still be queued (not on Linux, but on macOS): let it drain first.
  await Promise.race([new Promise((resolve) => process.stdout.write('', resolve)), new Promise((resolve) => setTimeout(resolve, 1_000))]);
  process.exit(code);
}

/**
 * Calls `gone` when the process that launched this one ends without a signal reaching this one:
 * a SIGHUP kills npm (which forwards only SIGINT and SIGTERM), leaving its script running.
 * (The npm scripts `exec` node, so node is npm's own child, and gets what npm forwards.)
 */
function watchLauncher(gone: () => void): void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    gone();
  }, 250);
  timer.unref();
}
