import { readFile } from 'node:fs/promises';
import { fail, usageError } from './errors.ts';
import { inputFile } from './paths.ts';
import { escapeText } from './text.ts';

/**
 * The source database as the commands that sync take it (npm run sync, npm start -- --source):
 * the URL (--source, else SOURCE_DATABASE_URL), the zone of its times without one (--timezone,
 * default UTC) and the mapping (Laravel's, or a mapping file's replacements). A malformed URL or
 * zone is a usage error; a mapping file that is no mapping fails, naming its key.
 */
export async function sourceOptions(values: { source?: string; mapping?: string; timezone?: string }) {
  const text = values.source ?? process.env.SOURCE_DATABASE_URL?.trim();
  if (!text) usageError('name the source database: --source <url> (or SOURCE_DATABASE_URL)');
  const { parseSourceUrl, SourceUrlError } = await import('../../shared/sync/source/url.ts');
  let source: ReturnType<typeof parseSourceUrl>;
  try {
    source = parseSourceUrl(text);
  } catch (error) {
    if (error instanceof SourceUrlError) usageError(`--source: ${escapeText(error.message)}`);
    throw error;
  }
  const { isTimeZone } = await import('../../shared/sync/read/times.ts');
  const timezone = values.timezone ?? 'UTC';
  if (!isTimeZone(timezone)) {
    usageError(`--timezone must be a time zone such as UTC or Europe/Berlin, not "${escapeText(timezone)}"`);
  }
  const file = values.mapping === undefined ? undefined : await inputFile(values.mapping, '--mapping');
  const { defaultMapping, MappingError, mappingFor, withMappingFile } = await import('../../shared/sync/mapping.ts');
  let given: unknown;
  if (file) {
    try {
      given = JSON.parse(await readFile(file, 'utf8'));
      // Checked now, whole: a mapping that is no mapping fails before anything connects.
      withMappingFile(defaultMapping(source.engine), given);
    } catch (error) {
      if (error instanceof MappingError || error instanceof SyntaxError) {
        fail(`the mapping ${escapeText(file)} is not usable: ${escapeText(error.message)}`);
      }
      throw error;
    }
  }
  /** The mapping for the source's shape: Laravel's (with or without team slugs), the file's replacements on it. */
  const mapping = mappingFor(source.engine, given);
  /** What repeats the options a hint names again (`--mapping <file>`), so that following it works. */
  const repeat = values.mapping === undefined ? '' : ` --mapping ${values.mapping}`;
  return { source, timezone, mapping, repeat };
}

/** A hint that names a command again names the mapping the user gave too, so that following it works. */
export function withRepeat(message: string, repeat: string): string {
  return repeat ? message.replace(/(npm run sync -- \w+ --source <url>)/g, `$1${repeat}`) : message;
}

/**
 * Other users of the machine read every process's command line (ps, /proc/<pid>/cmdline): the title
 * is set to the command line with the URL redacted. Node writes the title over the process's own
 * arguments (https://nodejs.org/api/process.html#processtitle). npm's own process, which started this
 * one, still shows what it was given: docs/sync.md recommends SOURCE_DATABASE_URL for that reason.
 */
export function hidePasswordFromProcessList(url: string, redacted: string): void {
  if (url === redacted) return;
  process.title = process.argv
    .map((arg) => arg.split(url).join(redacted))
    .map((arg) => (arg === process.execPath ? 'node' : arg))
    .join(' ');
}
