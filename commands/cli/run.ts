import { constants } from 'node:os';
import { parseArgs, type ParseArgsOptionDescriptor } from 'node:util';
import { describeDatabaseError, Failure, SettingError, UsageError } from './errors.ts';
import { escapeText, shownText } from './text.ts';

/**
 * How every command starts and ends (docs/contract.md, section 8): the command line read by
 * Node's strict `util.parseArgs`, `--help` answered, a usage error said in one line with the usage
 * (exit 2), the work done, and whatever goes wrong turned into one line and exit 1, never a stack
 * trace. Work to undo however the command ends (a server, DynamoDB Local) is registered with `onExit`.
 */

/** An option as parseArgs takes it, with what `--help` says of it. */
export type Option = ParseArgsOptionDescriptor & {
  help: string /** The value's placeholder, e.g. `<port>`. */;
  value?: string;
};

export interface Command<O extends Record<string, Option>> {
  /** How it is run, e.g. `npm run import`. */
  name: string;
  /** The usage lines, each a complete command line. */
  usage: readonly string[];
  /** What `--help` says first: what the command does (and its subcommands). */
  about: string;
  options: O;
  environment?: Record<string, string>;
  /** Positional arguments: `<file>` required, `[<file>]` optional. */
  positionals?: readonly string[];
  /**
   * The command keeps running after `main` returns (npm start) until a signal, or until whoever
   * launched it (npm) is gone: exit 0 once serving, the signal's own status (130, 143, 129) before.
   */
  serve?: boolean;
  main(line: CommandLine<O>): Promise<void>;
}

type CommandLine<O extends Record<string, Option>> = ReturnType<
  typeof parseArgs<{ options: O; allowPositionals: true; strict: true }>
>;

export function command<const O extends Record<string, Option>>(
  spec: Omit<Command<O>, 'main'>,
  main: Command<O>['main'],
): Command<O> {
  return { ...spec, main };
}

/** The settings of a command that writes an existing table (npm run import, npm run token), for `--help`. */
export const TABLE_ENVIRONMENT = {
  TABLE_NAME: 'the table (default team-resources)',
  DYNAMODB_ENDPOINT: 'the endpoint to call (else AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, or AWS)',
  AWS_REGION: "AWS's region (credentials: the AWS default chain)",
};

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
type StopSignal = (typeof STOP_SIGNALS)[number];
const EXIT_CODES = 'exit codes: 0 done, 1 failed (the message says why), 2 usage error';
/** Cleanups get this long, then the command exits anyway (DynamoDB Local's keeper still stops Java). */
const CLEANUP_LIMIT_MS = 15_000;

const cleanups: (() => unknown)[] = [];
const terminalHolds = new Set<() => void>();
let exiting = false;
let serving = false;
/** What the command says of the state it leaves, should a signal stop it now. */
let interruptNote: ((signal: StopSignal) => string) | undefined;

/** Runs `cleanup` when the command ends, however it ends; the last registered runs first. */
export function onExit(cleanup: () => unknown): void {
  cleanups.push(cleanup);
}

/**
 * Registers what gives the terminal back (a progress bar hides the cursor); returns the unregister,
 * or undefined once the command is ending: the terminal has been given back, and stays so while
 * the cleanups run (work still under way must not draw a new bar over it).
 */
export function holdTerminal(release: () => void): (() => void) | undefined {
  if (exiting) return undefined;
  terminalHolds.add(release);
  return () => void terminalHolds.delete(release);
}

/** From now on a signal that ends the command also says `note`: what was interrupted and the state it leaves. */
export function whileInterruptible(note: (signal: StopSignal) => string): void {
  interruptNote = note;
}

/**
 * Ends the command now, from outside its work (something it depends on died): says `message` in
 * one line, runs the cleanups, exits 1. Once serving too.
 */
export function failNow(message: string): void {
  void exit(1, escapeText(message));
}

/**
 * The command run with `args`, without touching the process: its help, a usage error, or its work.
 * Says the exit code, what goes to stdout (the help) and the message for stderr.
 */
export async function execute<O extends Record<string, Option>>(
  command: Command<O>,
  args: string[],
): Promise<{ code: number; stdout?: string; message?: string }> {
  if (args.includes('--help') || args.includes('-h')) return { code: 0, stdout: helpText(command) };
  try {
    let line: CommandLine<O>;
    try {
      line = parseArgs({ args, options: command.options, allowPositionals: true, strict: true });
    } catch (error) {
      // Node's own words, their first sentence: `Unknown option '--frob'`.
      throw new UsageError(escapeText((error as Error).message.split(/\.(\s|$)/)[0]));
    }
    checkPositionals(command.positionals ?? [], line.positionals);
    await command.main(line);
    return { code: 0 };
  } catch (error) {
    // A setting alone: the usage shows no settings.
    if (error instanceof SettingError) return { code: 2, message: `${command.name}: ${error.message}` };
    if (error instanceof UsageError)
      return {
        code: 2,
        message: [
          `${command.name}: ${error.message}`,
          ...usageLines(command),
          `(${command.name} -- --help for more)`,
        ].join('\n'),
      };
    return { code: 1, message: messageFor(error) };
  }
}

/** Runs the command in this process, with its command line, and exits as it ends. */
export async function runCommand<O extends Record<string, Option>>(command: Command<O>): Promise<void> {
  for (const event of ['uncaughtException', 'unhandledRejection'])
    process.on(event, (error) => void exit(1, messageFor(error)));
  process.stderr.on('error', () => {}); // a closed stderr must not turn every later message into another error
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (!command.serve)
      void exit(1, error.code === 'EPIPE' ? 'stdout was closed before everything was written' : messageFor(error));
  });
  let firstSignalAt = 0;
  for (const signal of STOP_SIGNALS) {
    process.on(signal, () => {
      // A Ctrl-C reaches node twice at once (from the terminal, and forwarded by npm): one stop.
      // A second one later, while stopping, stops at once (DynamoDB Local's keeper sees node go).
      if (exiting) return void (performance.now() - firstSignalAt > 1_000 && process.exit(1));
      firstSignalAt = performance.now();
      if (serving) return void exit(0, `${signal}: stopping`);
      const notes = [command.serve && `${signal}: stopped before the API was ready`, interruptNote?.(signal)]
        .filter(Boolean)
        .join('; ');
      void exit(128 + constants.signals[signal], escapeText(notes), signal);
    });
  }
  if (command.serve) {
    // A SIGHUP kills npm (which forwards only SIGINT and SIGTERM) and leaves node running: notice it.
    const parent = process.ppid;
    setInterval(
      () => process.ppid !== parent && void exit(0, 'the process that started this one is gone: stopping'),
      250,
    ).unref();
  }
  const { code, stdout, message } = await execute(command, process.argv.slice(2));
  if (stdout) process.stdout.write(stdout);
  if (command.serve && code === 0 && !stdout) serving = true;
  else await exit(code, message);
}

function usageLines(command: { usage: readonly string[] }): string[] {
  return command.usage.map((line, i) => `${i === 0 ? 'usage:' : '      '} ${line}`);
}

/** `--help`: the usage, what the command does, its options and environment (from the option table), the exit codes. */
function helpText(command: Command<Record<string, Option>>): string {
  const row = (left: string, right: string) => `  ${left.padEnd(27)}${right}`;
  const options = Object.entries(command.options).map(([name, option]) =>
    row(`--${name}${option.value ? ` ${option.value}` : ''}`, option.help),
  );
  const environment = Object.entries(command.environment ?? {}).map(([name, text]) => row(name, text));
  return [
    ...usageLines(command),
    '',
    command.about.trim(),
    '',
    'options:',
    ...options,
    row('-h, --help', 'print this help'),
    ...(environment.length ? ['', 'environment:', ...environment] : []),
    '',
    EXIT_CODES,
    '',
  ].join('\n');
}

function checkPositionals(names: readonly string[], given: string[]): void {
  if (given.length > names.length) throw new UsageError(`unexpected argument "${shownText(given[names.length])}"`);
  const missing = names.slice(given.length).find((name) => !name.startsWith('['));
  if (missing) throw new UsageError(`missing ${missing}`);
}

/** One line (or the operator's own message) for anything thrown, never a stack trace. */
function messageFor(error: unknown): string {
  if (error instanceof Failure) return error.message;
  const text =
    error instanceof Error
      ? `${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ''}`
      : String(error);
  return escapeText(describeDatabaseError(error) ?? `failed: ${text}`);
}

/** Gives the terminal back, says why, runs the cleanups, and exits with `code` (or by `signal`). Once. */
async function exit(code: number, message?: string, signal?: StopSignal): Promise<void> {
  if (exiting) return;
  exiting = true;
  for (const release of terminalHolds) {
    try {
      release();
    } catch {
      // The terminal may be gone (SIGHUP).
    }
  }
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
  await Promise.race([
    new Promise((resolve) => process.stdout.write('', resolve)),
    new Promise((resolve) => setTimeout(resolve, 1_000).unref()),
  ]);
  if (signal) {
    // Ended by the signal itself, so the parent (a shell) sees it; the same status should it be ignored.
    for (const s of STOP_SIGNALS) process.removeAllListeners(s);
    process.kill(process.pid, signal);
  }
  process.exit(code);
}
