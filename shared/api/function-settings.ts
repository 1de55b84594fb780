import { DOCUMENT_ROUTE, type FunctionName } from './routes.ts';

/**
 * The functions' size and time budget: one place, read by the stack that deploys them and by
 * the local server that stands in for Lambda.
 *
 * A request waits on the database at most DATABASE_WAIT_MS in all (contract section 2), then
 * answers 503; the function's timeout leaves it time to do so before Lambda would end it.
 *
 * 512 MB: Lambda allots CPU in proportion to memory, and a cold start is CPU-bound (parsing the
 * bundle, TLS, SigV4). The OpenAPI document's function returns a text fixed at import, with no
 * SDK and no DynamoDB call, so 128 MB is all it needs.
 */
export const DATABASE_WAIT_MS = 8_000;
export const FUNCTION_TIMEOUT_MS = 10_000;
export const FUNCTION_MEMORY_MB = 512;
export const DOCUMENT_FUNCTION_MEMORY_MB = 128;

/** The memory of the function serving a route (the stack deploys it; the local Lambda context reports it). */
export function functionMemoryMb(name: FunctionName | string): number {
  return name === DOCUMENT_ROUTE.name ? DOCUMENT_FUNCTION_MEMORY_MB : FUNCTION_MEMORY_MB;
}
