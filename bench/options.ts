/**
 * npm run bench's options: commands/bench.ts reads them and shows them in `--help`; bench.ts reads
 * them again once the command has checked them. Here, not in commands/bench.ts, which is still being
 * evaluated (its top-level await) when it imports bench.ts.
 */
export const BENCH_OPTIONS = {
  quick: { type: 'boolean', help: 'a smoke run: small teams, few samples, a 20 MB import; writes nothing' },
  'import-gb': { type: 'string', value: '<GB>', help: 'the size of the import measured; default 1, 0 skips it' },
  cold: { type: 'boolean', help: 'only the cold starts against the bare twin' },
  capture: { type: 'boolean', help: "only the app's write throughput beside the capture, in interleaved rounds" },
  'keeps-up': { type: 'boolean', help: 'only whether the sync keeps up with 16 writers for 60 s' },
  changes: { type: 'boolean', help: 'only the seconds from a commit to its answer, and at 100,000 projects' },
  size: { type: 'boolean', help: 'only the items and write units a change writes, at 2,000 to 100,000 projects' },
  'first-load': { type: 'boolean', help: 'only a first load of 1,000 teams and 100,000 tokens, through the limiter' },
} as const;
