/**
 * The source database as the commands and the deployed sync name it (docs/contract.md, section 9): a
 * URL, postgres:// or mysql:// (and their aliases), whose password no message ever shows.
 */
export type SourceEngine = 'postgres' | 'mysql';

export const ENGINE_NAMES: Record<SourceEngine, string> = { postgres: 'PostgreSQL', mysql: 'MySQL/MariaDB' };

export interface SourceUrl {
  engine: SourceEngine;
  /** The URL as given, for the driver. */
  url: string;
  /** The URL with its password replaced by `***`: the only form any message shows. */
  redacted: string;
  database: string;
}

export class SourceUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SourceUrlError';
  }
}

const SCHEMES: Record<string, SourceEngine> = {
  'postgres:': 'postgres',
  'postgresql:': 'postgres',
  'mysql:': 'mysql',
  'mariadb:': 'mysql',
};

/** The URL with its password, if any, as `***`. */
function redactUrl(text: string): string {
  try {
    const url = new URL(text);
    if (url.password) url.password = '***';
    // Both drivers also read a password from the query (?password=, and pg's ?sslpassword=).
    for (const name of [...url.searchParams.keys()]) {
      if (PASSWORD_PARAMETER.test(name)) url.searchParams.set(name, '***');
    }
    return url.toString();
  } catch {
    // Not a URL: whatever follows a colon before an @ may be a password, and so may a parameter.
    return text.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@').replace(/([?&][^=&]*pass[^=&]*=)[^&]*/gi, '$1***');
  }
}

const PASSWORD_PARAMETER = /pass/i;

/** A source URL, checked: postgres://, postgresql://, mysql:// or mariadb://, naming a database. */
export function parseSourceUrl(text: string): SourceUrl {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new SourceUrlError(`not a database URL: ${redactUrl(text)}`);
  }
  const engine = SCHEMES[url.protocol];
  if (!engine) {
    throw new SourceUrlError(
      `${redactUrl(text)}: the source must be postgres://, postgresql://, mysql:// or mariadb:// ` +
        `(not ${url.protocol}//)`,
    );
  }
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!database) throw new SourceUrlError(`${redactUrl(text)}: the URL names no database (…/<database>)`);
  return { engine, url: text, redacted: redactUrl(text), database };
}
