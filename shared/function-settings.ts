/**
 * The functions' size and time budget: one place, read by the stack that deploys them and by
 * the local server and handlers that stand in for Lambda.
 *
 * 10 s: a request makes at most two DynamoDB calls one after the other, each at most 2 attempts of
 * (connect 0.5 s + answer 1.5 s): 8 s in the worst case, and the request deadline answers 503
 * half a second before the function would be killed.
 *
 * 512 MB: the functions need about 75 MB, but Lambda allots CPU in proportion to memory, and a
 * cold start is CPU-bound (parsing the bundle, TLS, SigV4): 512 MB halves that part compared with
 * 256 MB, for a fraction of a cent per thousand requests (measured figures in infra/README.md).
 */
export const FUNCTION_TIMEOUT_MS = 10_000;
export const FUNCTION_MEMORY_MB = 512;
