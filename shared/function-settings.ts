import { DOCUMENT_ROUTE, type FunctionName } from './routes.ts';

/**
 * The functions' size and time budget: one place, read by the stack that deploys them and by
 * the local server and handlers that stand in for Lambda.
 *
 * 10 s: a request usually waits on one or two DynamoDB calls one after the other (rarely a third:
 * a page read again strongly consistent, a 404 confirmed), each at most 2 attempts of (connect
 * 0.5 s + answer 1.5 s); the request deadline (shared/deadline.ts) answers 503 half a second
 * before the function would be killed.
 *
 * 512 MB: the functions need about 75 MB, but Lambda allots CPU in proportion to memory, and a
 * cold start is CPU-bound (parsing the bundle, TLS, SigV4): 512 MB halves that part compared with
 * 256 MB, for a fraction of a cent per thousand requests (README.md, Deploy: "Bundle sizes").
 *
 * 128 MB for the OpenAPI document's function: it returns a JSON text fixed at import, with no AWS
 * SDK, no DynamoDB call and no TLS (a 48 KB bundle, a third of a data function's cold-start CPU),
 * and generators fetch it rarely; more memory would buy it nothing worth paying for.
 */
export const FUNCTION_TIMEOUT_MS = 10_000;
export const FUNCTION_MEMORY_MB = 512;
export const DOCUMENT_FUNCTION_MEMORY_MB = 128;

/** The memory of the function serving a route (the stack deploys it; the local Lambda context reports it). */
export function functionMemoryMb(name: FunctionName | string): number {
  return name === DOCUMENT_ROUTE.name ? DOCUMENT_FUNCTION_MEMORY_MB : FUNCTION_MEMORY_MB;
}
