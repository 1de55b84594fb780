import { sourceFault } from './source/faults.ts';
import type { SourceUrl } from './source/url.ts';

/** What ends a sync at once, in one line: configuration, not weather (credentials, schema, setup, another sync). */
export class SyncRefused extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SyncRefused';
  }
}

/** A source error that a person must fix, said in one line (the password never shown). */
export function sourceRefusal(error: unknown, source: SourceUrl): SyncRefused {
  if (error instanceof SyncRefused) return error;
  const { message } = error as Error;
  const fault = sourceFault(error);
  const where = source.redacted;
  if (fault === 'credentials') return new SyncRefused(`the source refused the credentials (${where}): ${message}`);
  if (fault === 'database') return new SyncRefused(`the source has no such database (${where}): ${message}`);
  if (fault === 'privileges') return new SyncRefused(`the source's role lacks a privilege (${where}): ${message}`);
  if (fault === 'schema')
    return new SyncRefused(`the source's schema does not match the mapping (${where}): ${message}`);
  return new SyncRefused(`the source failed (${where}): ${message}`);
}

/**
 * DynamoDB throttled, failed or did not answer: weather, said once and waited out. An AWS SDK error
 * carries `$metadata`; the commands' client reports silence as NoResponse.
 */
export function isDynamoDbFailure(error: unknown): boolean {
  return (
    error instanceof Error && ('$metadata' in error || error.name === 'NoResponse' || error.name === 'LeftUnprocessed')
  );
}
