import { usageError } from '../cli/errors.ts';
import { escapeText } from '../cli/text.ts';

/** A time in the API's one shape (UTC, whole seconds, `+00:00`): what `token` prints and stores. */
export function utcTime(time: Date | string): string {
  return new Date(time).toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

/** `--expires-in 90d` (days), `12h` (hours) or `30m` (minutes) from now, as the API's UTC time shape. */
export function expiryFrom(text: string, now = new Date()): string {
  const match = /^([1-9][0-9]{0,5})([dhm])$/.exec(text);
  if (!match) usageError(`--expires-in must look like 90d, 12h or 30m, not "${escapeText(text)}"`);
  const minutes = Number(match[1]) * { d: 1440, h: 60, m: 1 }[match[2] as 'd' | 'h' | 'm'];
  return utcTime(new Date(now.getTime() + minutes * 60_000));
}
