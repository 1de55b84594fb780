import { constants } from 'node:os';
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { describeDatabaseError, Failure, SettingError, UsageError } from './errors.ts';
import { escapeText } from './text.ts';

/**
 * How every command starts and ends (docs/contract.md, section 8): the command line read by
 * Node's strict `util.parseArgs`, `--help` answered, a usage error said in one line with the usage
 * (exit 2), the work done, and whatever goes wrong turned into one line and exit 1, never a stack
 * trace. Work to undo however the command ends (a server, DynamoDB Local) is registered with `onExit`.
 */
export interface Command<O extends ParseArgsOptionsConfig> {
  /** How it is run, e.g. `npm run import`. */
  name: string;
  /** The usage lines, each a complete command line. */
  usage: readonly string[];
  /** The rest of `--help`: what the command does, its options and environment. */
  help: string;
  options: O;
  /** Positional arguments: `<file>` required, `[<file>]` optional. */
  positionals?: readonly string[];
  /**
   * The command keeps running after `main` returns (npm start) and stops everything it started on
   * SIGINT, SIGTERM and SIGHUP, or when whoever launched it (npm) is gone: exit 0 once serving, the
   * signal's own status (130, 143, 129) before.
   */
  serve?: boolean;
}

export type CommandLine<O extends ParseArgsOptionsConfig> = ReturnType<typeof parseArgs<{ options: O; allowPositionals: true; strict: true }>>;

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
type StopSignal = (typeof STOP_SIGNALS)[number];
const signalStatus = (signal: StopSignal) => 128 + constants.signals[signal];
const EXIT_CODES = 'exit codes: 0 done, 1 failed (the message says why), 2 usage error';
/** Cleanups get this long, then the command exits anyway (DynamoDB Local's keeper still stops Java). */
const CLEANUP_LIMIT_MS = 15_000;

const cleanups: (() => unknown)[] = [];
const terminalHolds = new Set<() => void>();
let exiting = false;
let serving = false;
let serveMode = false;
/** What the command says of the state it leaves, should a signal stop it now. */
let interruptNote: ((signal: StopSignal) => string) | undefined;

/** Runs `cleanup` when the command ends, however it ends; the last registered runs first. */
export function onExit(cleanup: () => unknown): void {
  cleanups.push(cleanup);
}

/** Registers what gives the terminal back (a progress bar hides the cursor); returns the unregister. */
export function holdTerminal(release: () => void): () => void {
  terminalHolds.add(release);
  return () => void terminalHolds.delete(release);
}

function releaseTerminal(): void {
  for (const release of terminalHolds) {
    try {
      release();
    } catch {
      // The terminal may be gone (SIGHUP).
    }
  }
  terminalHolds.clear();
}

/**
 * From now on a signal ends the command with the terminal given back, `note` (what was interrupted
 * and the state it leaves) on stderr, and the signal's own status. In a serving command the note is
 * added to what it says when stopped before it is ready.
 */
export function whileInterruptible(note: (signal: StopSignal) => string): void {
  if (!interruptNote && !serveMode) {
    for (const signal of STOP_SIGNALS) process.on(signal, () => void exit(signalStatus(signal), escapeText(interruptNote!(signal)), signal));
  }
  interruptNote = note;
}

export async function runCommand<const O extends ParseArgsOptionsConfig>(command: Command<O>, main: (line: CommandLine<O>) => Promise<void>): Promise<void> {
  process.on('uncaughtException', (error) => void exit(1, messageFor(error)));
  process.on('unhandledRejection', (error) => void exit(1, messageFor(error)));
  process.stderr.on('error', () => {}); // a closed stderr must not turn every later message into another error
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (!command.serve) void exit(1, error.code === 'EPIPE' ? 'stdout was closed before everything was written' : messageFor(error));
  });
  if (command.serve) {
    serveMode = true;
    serveUntilStopped();
  }

  const usage = () => [...command.usage.map((line, i) => `${i === 0 ? 'usage:' : '      '} ${line}`)];
  const usageError = (error: UsageError) => exit(2, error instanceof SettingError
    ? `${command.name}: ${error.message}` // the usage shows no settings
    : [`${command.name}: ${error.message}`, ...usage(), `(${command.name} -- --help for more)`].join('\n'));

  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write([...usage(), '', command.help.trim(), '', EXIT_CODES, ''].join('\n'));
    return exit(0);
  }
  let line: CommandLine<O>;
  try {
    line = parseArgs({ args, options: command.options, allowPositionals: true, strict: true });
    checkPositionals(command.positionals ?? [], line.positionals);
  } catch (error) {
    return usageError(error instanceof UsageError ? error : new UsageError(parseProblem(error as Error)));
  }
  try {
    await main(line);
  } catch (error) {
    return error instanceof UsageError ? usageError(error) : exit(1, messageFor(error));
  }
  if (command.serve) serving = true;
  else return exit(0);
}

/** Node's own words for what is wrong with the command line, its first sentence: `Unknown option '--frob'`. */
function parseProblem(error: Error): string {
  return escapeText(error.message.split(/\.(\s|$)/)[0]);
}

function checkPositionals(names: readonly string[], given: string[]): void {
  if (given.length > names.length) throw new UsageError(`unexpected argument "${escapeText(given[names.length])}"`);
  const missing = names.slice(given.length).find((name) => !name.startsWith('['));
  if (missing) throw new UsageError(`missing ${missing}`);
}

/** The stop signals of a serving command (npm start), and its launcher's going. */
function serveUntilStopped(): void {
  let firstSignalAt = 0;
  for (const signal of STOP_SIGNALS) {
    process.on(signal, () => {
      // A Ctrl-C reaches node twice at once (from the terminal, and forwarded by npm): one stop.
      // A second one later, while stopping, stops at once (DynamoDB Local's keeper sees node go).
      if (exiting) return void (performance.now() - firstSignalAt > 1_000 && process.exit(1));
      firstSignalAt = performance.now();
      if (serving) return void exit(0, `${signal}: stopping`);
      const note = interruptNote ? `; ${interruptNote(signal)}` : '';
      void exit(signalStatus(signal), escapeText(`${signal}: stopped before the API was ready${note}`), signal);
    });
  }
  // A SIGHUP kills npm (which forwards only SIGINT and SIGTERM) and leaves node running: notice it.
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid !== parent) void exit(0, 'the process that started this one is gone: stopping');
  }, 250);
  watch.unref();
}

/** One line (or the operator's own message) for anything thrown, never a stack trace. */
function messageFor(error: unknown): string {
  if (error instanceof Failure) return error.message;
  const database = describeDatabaseError(error);
  if (database) return escapeText(database);
  if (!(error instanceof Error)) return escapeText(`failed: ${String(error)}`);
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
  return escapeText(`failed: ${error.message}${cause}`);
}

/** Gives the terminal back, says why, runs the cleanups, and exits with `code` (or by `signal`). Once. */
async function exit(code: number, message?: string, signal?: StopSignal): Promise<void> {
  if (exiting) return;
  exiting = true;
  releaseTerminal();
  if (message) process.stderr.write(`${message}\n`);
  setTimeout(() => process.exit(code), CLEANUP_LIMIT_MS);
  for (const cleanup of cleanups.reverse()) {
    try {
      await cleanup();
    } catch (error) {
      process.stderr.write(`while stopping: ${messageFor(error)}\n`);
    }
  }
  // Output to a pipe may still be queued (on macOS): let it drain first.
  await Promise.race([new Promise((resolve) => process.stdout.write('', resolve)), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
  if (signal) {
    // Ended by the signal itself, so the parent (a shell) sees it; the same status should it be ignored.
    for (const s of STOP_SIGNALS) process.removeAllListeners(s);
    process.kill(process.pid, signal);
  }
  process.exit(code);
}
