import { readLogLevel } from '../../shared/api/log.ts';
import { NAME_MAX, stringProblem } from '../../shared/domain/strings.ts';
import { SettingError, usageError } from './errors.ts';
import { escapeText, shownText } from './text.ts';

/** Option values and settings as the commands take them; a malformed one is a usage error naming it. */

/** A TCP port, 0 to 65535 (0: any free port). */
export function portValue(option: string, text: string): number {
  if (!/^[0-9]{1,5}$/.test(text) || Number(text) > 65535)
    usageError(`${option} must be a port number from 0 to 65535, not "${shownText(text)}"`);
  return Number(text);
}

/** An id as the snapshot format has them: a positive integer up to 2^53 - 1. */
export function idValue(option: string, text: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(text) || !Number.isSafeInteger(Number(text)))
    usageError(`${option} must be an id (a positive integer), not "${shownText(text)}"`);
  return Number(text);
}

/** A name following the snapshot's string rules (docs/contract.md, section 7). */
export function nameValue(option: string, text: string): string {
  const problem = stringProblem(text, NAME_MAX);
  if (problem) usageError(`${option} ${problem}: "${shownText(text)}"`);
  return text;
}

/** A setting that holds a URL, trimmed, or undefined when unset; anything but an http(s) URL is malformed. */
export function urlSetting(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env[name]?.trim() || undefined;
  if (value !== undefined && !/^https?:$/.test(URL.parse(value)?.protocol ?? '')) {
    throw new SettingError(`${name} is not an http(s) URL: "${escapeText(value)}" (e.g. http://127.0.0.1:8000)`);
  }
  return value;
}

/** DYNAMODB_ENDPOINT: the running endpoint `npm start` and `invoke` use instead of starting DynamoDB Local. */
export function endpointSetting(): string | undefined {
  return urlSetting('DYNAMODB_ENDPOINT');
}

/** The functions' LOG_LEVEL, checked before anything starts (they would refuse it at their start). */
export function checkLogLevel(): void {
  try {
    readLogLevel();
  } catch (error) {
    throw new SettingError(escapeText((error as Error).message));
  }
}
