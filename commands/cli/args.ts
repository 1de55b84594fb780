import { parseArgs } from 'node:util';
import { UsageError } from './errors.ts';
import { escapeText } from './text.ts';

/**
 * Command lines, read with Node's own `util.parseArgs` in its token mode: Node splits the
 * arguments (`--x=v`, `--x v`, `-h`, `--`), and this module decides what is wrong with them, so
 * every problem is one plain line (`unknown option --frob`) rather than Node's ERR_PARSE_ARGS_*
 * text, and the help and the usage lines come from the same description as the parsing.
 */

export interface OptionSpec {
  type: 'string' | 'boolean';
  /** How the value is shown in the help, e.g. `<port>`. */
  value?: string;
  /** One line for the help. */
  help: string;
}

export interface CommandSpec {
  /** How it is run, e.g. `npm run import`. */
  name: string;
  /** The usage lines, each a complete command line (also what the README's Commands table shows). */
  usage: string[];
  /** What the command does, a few lines for the help. */
  about: string;
  options: Record<string, OptionSpec>;
  /** Sub-commands (`token create`), each with the options and arguments it accepts. */
  subcommands?: Record<string, { options: string[]; arguments: string[]; help: string }>;
  /** Positional arguments (of a command without sub-commands): `<file>` required, `[<file>]` optional. */
  arguments?: string[];
  /** Environment variables the command reads, with a line each. */
  environment?: Record<string, string>;
}

export interface CommandLine {
  subcommand?: string;
  positionals: string[];
  /** A string option's value, if given. */
  option(name: string): string | undefined;
  /** Whether a boolean option was given. */
  flag(name: string): boolean;
}

const EXIT_CODES_LINE = 'exit codes: 0 done, 1 failed (the message says why), 2 usage error';

/** The full help, for `--help`. */
export function helpText(spec: CommandSpec): string {
  const options: [string, string][] = Object.entries(spec.options).map(([name, o]) => [`--${name}${o.value ? ` ${o.value}` : ''}`, o.help]);
  options.push(['-h, --help', 'print this help']);
  const lines = [...usageLines(spec), '', spec.about, ''];
  if (spec.subcommands) {
    lines.push('commands:', ...table(Object.entries(spec.subcommands).map(([name, s]) => [name, s.help])), '');
  }
  lines.push('options:', ...table(options), '');
  if (spec.environment) lines.push('environment:', ...table(Object.entries(spec.environment)), '');
  lines.push(EXIT_CODES_LINE);
  return lines.join('\n') + '\n';
}

/** `usage: …` and the further usage lines under it. */
export function usageLines(spec: CommandSpec): string[] {
  return spec.usage.map((line, i) => `${i === 0 ? 'usage:' : '      '} ${line}`);
}

function table(rows: (readonly [string, string])[]): string[] {
  const width = Math.max(...rows.map(([left]) => left.length)) + 3;
  return rows.map(([left, right]) => `  ${left.padEnd(width)}${right}`);
}

/**
 * Reads the command line against the spec. Returns undefined when help was asked for (anywhere
 * on the line); throws UsageError, naming the first problem, when the line is wrong.
 */
export function parseCommandLine(spec: CommandSpec, args: string[]): CommandLine | undefined {
  const { tokens } = parseArgs({
    args,
    options: { ...spec.options, help: { type: 'boolean', short: 'h' } },
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  if (tokens.some((t) => t.kind === 'option' && t.name === 'help')) return undefined;

  const positionals: string[] = [];
  const values: Record<string, string | true> = {};
  for (const token of tokens) {
    if (token.kind === 'positional') positionals.push(token.value);
    if (token.kind !== 'option') continue;
    const option = spec.options[token.name];
    const shown = escapeText(token.rawName);
    if (!option) throw new UsageError(`unknown option ${shown}`);
    if (values[token.name] !== undefined) throw new UsageError(`${shown} is given twice`);
    if (option.type === 'boolean') {
      if (token.value !== undefined) throw new UsageError(`${shown} takes no value`);
      values[token.name] = true;
    } else {
      // Node takes the next argument as the value whatever it is; `--port --data x` is a missing value.
      if (token.value === undefined || (!token.inlineValue && token.value.startsWith('-') && token.value !== '-')) {
        throw new UsageError(`${shown} needs a value${option.value ? ` ${option.value}` : ''}`);
      }
      values[token.name] = token.value;
    }
  }

  let subcommand: string | undefined;
  let allowed = Object.keys(spec.options);
  let names = spec.arguments ?? [];
  if (spec.subcommands) {
    subcommand = positionals.shift();
    if (subcommand === undefined) throw new UsageError(`name a command: ${Object.keys(spec.subcommands).join(', ')}`);
    const sub = spec.subcommands[subcommand];
    if (!sub) throw new UsageError(`unknown command "${escapeText(subcommand)}" (use ${Object.keys(spec.subcommands).join(', ')})`);
    allowed = sub.options;
    names = sub.arguments;
  }
  for (const name of Object.keys(values)) {
    if (!allowed.includes(name)) throw new UsageError(`--${name} does not apply to ${subcommand ?? 'this command'}`);
  }
  if (positionals.length > names.length) throw new UsageError(`unexpected argument "${escapeText(positionals[names.length]!)}"`);
  const missing = names.slice(positionals.length).find((name) => !name.startsWith('['));
  if (missing) throw new UsageError(`missing ${missing}`);
  return {
    subcommand,
    positionals,
    option: (name) => (typeof values[name] === 'string' ? values[name] : undefined),
    flag: (name) => values[name] === true,
  };
}
