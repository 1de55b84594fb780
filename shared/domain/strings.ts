/**
 * The snapshot format's rule for strings (docs/contract.md, section 7), in one place for the snapshot's
 * fields and the names given on the command line (`token create --name`): well-formed Unicode
 * (no lone surrogates), no control characters (U+0000 to U+001F, U+007F to U+009F), 1 to `max`
 * code points. Plain functions, so a command can check a name without loading the validator.
 */
/** Names, labels, usernames and project slugs: 1 to 255 code points. */
export const NAME_MAX = 255;

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const HIGH_SURROGATES = /[\ud800-\udbff]/g;

/** Code points of a well-formed string: each surrogate pair is two code units, one code point. */
const codePoints = (text: string) => text.length - (text.match(HIGH_SURROGATES)?.length ?? 0);

/** Why `text` breaks the rule, or undefined when it keeps it. */
export function stringProblem(text: string, max: number): string | undefined {
  if (!text.isWellFormed()) return 'is not well-formed Unicode (it has a lone surrogate)';
  if (CONTROL.test(text)) return 'contains a control character';
  if (text.length === 0) return 'must not be empty';
  if (codePoints(text) > max) return `must be at most ${max.toLocaleString('en')} characters`;
  return undefined;
}

const SHOWN_CHARACTERS = 40;

/**
 * A value from data as a message echoes it: its first 40 characters and `…` when longer (a
 * 1,000,000-digit id, a 10 KB name). What prints a message escapes its control characters
 * (commands/cli/text.ts).
 */
export function cutText(value: unknown): string {
  const characters = [...String(value)];
  return characters.length > SHOWN_CHARACTERS ? `${characters.slice(0, SHOWN_CHARACTERS).join('')}…` : String(value);
}

/** Text from data, quoted for a message: cut (cutText), in double quotes, a quote inside written `\"`. */
export function quote(text: string): string {
  return `"${cutText(text).replaceAll('"', '\\"')}"`;
}
