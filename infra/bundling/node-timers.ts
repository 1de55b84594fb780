import { createRequire } from 'node:module';

/**
 * `node:timers` as the function bundles see it, for the reason node-http.ts gives: an ES import of
 * a built-in builds a facade over all of its exports, and node:timers' `promises` export loads
 * node:timers/promises, which nothing here uses, at every cold start. middy's core imports
 * `setTimeout` from it, and the retry policy (shared/table/retry.ts) `clearTimeout` too; esbuild
 * stops the build if a dependency ever imports another name.
 */
const timers = createRequire(import.meta.url)('node:timers') as typeof import('node:timers');

export const { setTimeout, clearTimeout } = timers;
