import { constants } from 'node:os';
import { helpText, parseCommandLine, usageLines, type CommandLine, type CommandSpec } from './args.ts';
import { describeDatabaseError, EXIT, Failure, SettingError, UsageError } from './errors.ts';
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
   * on SIGINT, SIGTERM and SIGHUP, or when whoever launched it (npm) is gone: exit 0 once serving,
   * the signal's own status (130, 143, 129) when it came before `main` returned.
   */
  serve?: boolean;
  // Other commands keep Node's default: a signal ends them at once, and DynamoDB Local's keeper
  // (commands/local/java-keeper.ts) stops Java when it sees the command gone; while work is under
  // way that a signal should explain (an import), whileInterruptible says what it leaves first.
}

const cleanups: (() => unknown)[] = [];
let exiting = false;
/** npm start: main has returned, the API is serving. Until then a signal is an interruption (exit 128 + signal). */
let serving = false;
/** The command is npm start (RunOptions.serve): runCommand handles the stop signals itself. */
let serveMode = false;
/** What the command says of the state it leaves, should a signal stop it now (see whileInterruptible). */
let interruptNote: ((signal: StopSignal) => string) | undefined;
/** What undoes a display's hold on the terminal (a progress bar hides the cursor and line wrapping). */
const terminalHolds = new Set<() => void>();

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
type StopSignal = (typeof STOP_SIGNALS)[number];
/** The conventional exit status of a process a signal ended: 128 + the signal's number (130, 143, 129). */
const signalStatus = (signal: StopSignal) => 128 + constants.signals[signal];

/**
 * Registers what gives the terminal back (shows the cursor, wraps lines again) while a display
 * holds it; every way the command ends calls it before its last message. Returns the unregister.
 */
export function holdTerminal(release: () => void): () => void {
  terminalHolds.add(release);
  return () => void terminalHolds.delete(release);
}

function releaseTerminal(): void {
  for (const release of [...terminalHolds]) {
    try {
      release();
    } catch {
      // The terminal may be gone (SIGHUP); nothing more to give back.
    }
  }
  terminalHolds.clear();
}

/**
 * From now on, SIGINT, SIGTERM and SIGHUP end the command with the terminal given back, one line
 * on stderr (`note`: what was interrupted and the state it leaves), and the signal's own status
 * (the signal re-raised: 130, 143, 129 in a shell). Without it a signal ends a command at once, as
 * Node does by default. In npm start (serve), the note is added to what it says when a signal
 * stops it before the API is ready.
 */
export function whileInterruptible(note: (signal: StopSignal) => string): void {
  interruptNote = note;
  if (serveMode) return;
  for (const signal of STOP_SIGNALS) {
    process.on(signal, () => {
      releaseTerminal();
      process.stderr.write(`${escapeText(note(signal))}\n`);
      endBy(signal);
    });
  }
}

/** Ends the process by `signal` itself (its default action, so the parent sees the signal), or with 128 + its number. */
function endBy(signal: StopSignal): never {
  for (const s of STOP_SIGNALS) process.removeAllListeners(s);
  process.kill(process.pid, signal);
  // The default action ends the process before this runs; should it be ignored here, the same status.
  process.exit(signalStatus(signal));
}

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
    serveMode = true;
    let firstSignalAt = 0;
    for (const signal of STOP_SIGNALS) {
      process.on(signal, () => {
        // A Ctrl-C reaches node twice at once (from the terminal, and forwarded by npm): one stop.
        // A second Ctrl-C later, while stopping, stops at once (DynamoDB Local's keeper sees node go).
        if (exiting) {
          if (performance.now() - firstSignalAt > 1_000) process.exit(EXIT.failed);
          return;
        }
        firstSignalAt = performance.now();
        if (serving) return void exit(EXIT.done, `${signal}: stopping`);
        // Still starting (DynamoDB Local, the import): the API never served, so this is no success.
        const note = interruptNote ? `; ${interruptNote(signal)}` : '';
        void exit(signalStatus(signal), escapeText(`${signal}: stopped before the API was ready${note}`), signal);
      });
    }
    watchLauncher(() => void exit(EXIT.done, 'the process that started this one is gone: stopping'));
  }

  let line: CommandLine | undefined;
  try {
    line = parseCommandLine(spec, process.argv.slice(2));
  } catch (error) {
    if (error instanceof UsageError) return exit(EXIT.usage, usageMessage(spec, error.message, error));
    throw error;
  }
  if (!line) {
    process.stdout.write(helpText(spec));
    return exit(EXIT.done);
  }
  try {
    await main(line);
  } catch (error) {
    if (error instanceof UsageError) return exit(EXIT.usage, usageMessage(spec, error.message, error));
    return exit(EXIT.failed, messageFor(error));
  }
  if (!options.serve) return exit(EXIT.done);
  serving = true;
}

/** The problem on one line, then how the command is used (not for a setting: the usage does not show them). */
function usageMessage(spec: CommandSpec, problem: string, error?: unknown): string {
  if (error instanceof SettingError) return `${spec.name}: ${problem}`;
  return [`${spec.name}: ${problem}`, ...usageLines(spec), `(${spec.name} -- --help for more)`].join('\n');
}

/** One line (or the operator's own message) for anything thrown, never a stack trace. */
function messageFor(error: unknown): string {
  if (error instanceof Failure) return error.message;
  const database = describeDatabaseError(error);
  if (database) return escapeText(database);
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
    // The message alone: an error's class name (LockHeld, SnapshotChanged) says nothing to an operator.
    return escapeText(`failed: ${error.message}${cause}`);
  }
  return escapeText(`failed: ${String(error)}`);
}

/**
 * Gives the terminal back, says why (if there is something to say), runs the cleanups, and exits
 * with `code`, or by `signal` when one stopped the command. Once.
 */
async function exit(code: number, message?: string, signal?: StopSignal): Promise<void> {
  if (exiting) return;
  exiting = true;
  releaseTerminal();
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
  if (signal) endBy(signal);
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
