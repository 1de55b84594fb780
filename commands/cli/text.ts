import { cutText } from '../../shared/domain/strings.ts';

/**
 * Text from data on a terminal. A snapshot or a token name may hold escape sequences (ESC [ …,
 * CSI U+009B) that would move the cursor, recolour or retitle the terminal, or hide what follows;
 * everything a command prints from data goes through `escapeText`, so it shows them instead.
 */

/**
 * C0 controls, DEL and C1 controls; the invisible characters that reorder or split a line
 * (bidirectional marks, overrides and isolates, line and paragraph separators); the other
 * invisible format characters (soft hyphen, zero-width spaces and joiners, word joiner,
 * byte-order mark), which would make two different names look the same; lone surrogates.
 */
const UNSAFE =
  /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]|[\ud800-\udfff]/gu;

/**
 * The text with every unsafe character written as an escape: `\x1b` below U+0080, `\u009b`
 * above. Printable text, backslashes included, is left as it is.
 */
export function escapeText(value: unknown): string {
  return String(value).replace(UNSAFE, (char) => {
    const code = char.charCodeAt(0);
    return code < 0x80 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** How many characters of a value from data (or the command line) a message shows. */
/**
 * A value from data or the command line as a message echoes it: escaped, and cut to its first 40
 * characters and `…` when longer (shared/domain/strings.ts, cutText).
 */
export function shownText(value: unknown): string {
  return escapeText(cutText(value));
}

/** A number as every command prints a count: thousands separated (150,000). */
export function count(n: number): string {
  return n.toLocaleString('en');
}

/** A count with its noun, singular or plural as the count says: `1 team`, `150,000 projects`. */
export function counted(n: number, one: string, many = `${one}s`): string {
  return `${count(n)} ${n === 1 ? one : many}`;
}

/** Writes one line of text from data (or the environment) to stderr, escaped. */
export function reportLine(line: string): boolean {
  return process.stderr.write(`${escapeText(line)}\n`);
}
