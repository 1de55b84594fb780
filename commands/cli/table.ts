import { createDocumentClient } from '../store/document-client.ts';

/** The table and client a command-line tool works on: TABLE_NAME, and DYNAMODB_ENDPOINT or AWS. */
export function commandTable(defaultTable?: string) {
  const tableName = process.env.TABLE_NAME?.trim() || defaultTable;
  if (!tableName) fail('TABLE_NAME is not set: name the table to work on, e.g. TABLE_NAME=team-resources');
  const endpoint = process.env.DYNAMODB_ENDPOINT?.trim() || undefined;
  // Command-line tools may wait longer and retry more than a request may.
  const doc = createDocumentClient({ endpoint, maxAttempts: 8, connectionTimeoutMs: 3_000, requestTimeoutMs: 30_000 });
  return { tableName, endpoint, doc };
}

export function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}
