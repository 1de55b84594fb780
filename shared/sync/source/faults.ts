import { SourceSilent } from './connection.ts';

/** What kind of failure an error of the source is: the sync reports each kind its own way. */
type SourceFault = 'credentials' | 'database' | 'privileges' | 'schema' | 'unreachable';

const POSTGRES_FAULTS: Record<string, SourceFault> = {
  '28P01': 'credentials', // invalid_password
  '28000': 'credentials', // invalid_authorization_specification
  '3D000': 'database', // invalid_catalog_name
  '42501': 'privileges', // insufficient_privilege
  '42P01': 'schema', // undefined_table
  '42703': 'schema', // undefined_column
  '57P01': 'unreachable', // admin_shutdown
  '57P02': 'unreachable', // crash_shutdown
  '57P03': 'unreachable', // cannot_connect_now
  '53300': 'unreachable', // too_many_connections
};
const MYSQL_FAULTS: Record<string, SourceFault> = {
  ER_ACCESS_DENIED_ERROR: 'credentials',
  ER_DBACCESS_DENIED_ERROR: 'privileges',
  ER_BAD_DB_ERROR: 'database',
  ER_TABLEACCESS_DENIED_ERROR: 'privileges',
  ER_COLUMNACCESS_DENIED_ERROR: 'privileges',
  ER_SPECIFIC_ACCESS_DENIED_ERROR: 'privileges',
  ER_NO_SUCH_TABLE: 'schema',
  ER_BAD_FIELD_ERROR: 'schema',
  ER_CON_COUNT_ERROR: 'unreachable',
  ER_SERVER_SHUTDOWN: 'unreachable',
};
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
]);

/** The kind of an error the source or the driver raised, or undefined for anything else (a bug). */
export function sourceFault(error: unknown): SourceFault | undefined {
  if (error instanceof SourceSilent) return 'unreachable';
  const { code, message } = (error ?? {}) as { code?: string; message?: string };
  if (code && POSTGRES_FAULTS[code]) return POSTGRES_FAULTS[code];
  if (code && MYSQL_FAULTS[code]) return MYSQL_FAULTS[code];
  if (code && NETWORK_CODES.has(code)) return 'unreachable';
  // mysql2 marks an error of the connection itself (lost, closed, cut) as fatal.
  if ((error as { fatal?: boolean }).fatal === true) return 'unreachable';
  // node-postgres's own words for a connection that ended or timed out before the server answered.
  if (
    /Connection terminated|timeout expired|Query read timeout|Client has encountered a connection error/i.test(
      message ?? '',
    )
  ) {
    return 'unreachable';
  }
  return undefined;
}
