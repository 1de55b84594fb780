import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Which test file starts first. Vitest runs the slowest files first when it has their durations
 * from an earlier run; a fresh clone has none, and by file size it would start with quick unit
 * files and leave a slow file to run alone at the end. Without durations, the files that took
 * longest in a measured run (SLOWEST, longest first) start first; then the others in the order of
 * these path prefixes (the command-line tests, which spend their time in the processes they start,
 * then robustness, infra, the other integration tests, unit), each group in vitest's own order.
 */
const SLOWEST = [
  // Seconds each took in `npm test` on 2 cores (2026-11-28, 3 workers, durations cached), 15 s or more.
  '/test/integration/sync-transactions.test.ts', // 85
  '/test/integration/sync-command.test.ts', // 70
  '/test/integration/commands.test.ts', // 53
  '/test/infra/synth-usage.test.ts', // 48
  '/test/integration/command-signals.test.ts', // 41
  '/test/integration/sync-transactions-while-reading.test.ts', // 35
  '/test/robustness/http-fuzz.test.ts', // 29
  '/test/robustness/isolation.property.test.ts', // 24
  '/test/integration/sync-faults.test.ts', // 23
  '/test/robustness/list-changes.property.test.ts', // 23
  '/test/integration/write-cost.test.ts', // 23
  '/test/integration/sync-dynamodb-gone.test.ts', // 21
  '/test/integration/sync-hints.test.ts', // 21
  '/test/integration/migration-guide.test.ts', // 21
  '/test/integration/import-over-time.test.ts', // 20
  '/test/integration/command-terminal.test.ts', // 20
  '/test/integration/sync-migrations.test.ts', // 20
  '/test/integration/sync-bundle.test.ts', // 19
  '/test/integration/import-safety.test.ts', // 19
  '/test/integration/custom-domain-links.test.ts', // 18
  '/test/integration/command-no-response.test.ts', // 18
  '/test/robustness/import-kill.test.ts', // 18
  '/test/integration/sync-progress.test.ts', // 17
  '/test/integration/local-first-pass.test.ts', // 16
  '/test/integration/sync.test.ts', // 16
  '/test/integration/sync-log-position.test.ts', // 15
];
const SLOW_FIRST = [
  '/test/integration/command',
  '/test/robustness/',
  '/test/infra/',
  '/test/integration/',
  '/test/unit/',
];

const rank = (spec: TestSpecification) => {
  const named = SLOWEST.findIndex((path) => spec.moduleId.endsWith(path));
  if (named !== -1) return named;
  const index = SLOW_FIRST.findIndex((prefix) => spec.moduleId.includes(prefix));
  return SLOWEST.length + (index === -1 ? SLOW_FIRST.length : index);
};

export default class SlowFoldersFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const results = sorted.map((spec) => this.ctx.cache.getTestSpecificationResult(spec));
    // With every file's duration, the longest first whatever its project: vitest's own order puts
    // the projects one after another by name, so the integration files, the longest, waited for
    // the infra files to start (sync-transactions began 60 s into the run).
    if (results.every((result) => result))
      return sorted
        .map((spec, order) => ({
          spec,
          order,
          duration: results[order]?.failed ? Infinity : (results[order]?.duration ?? 0),
        }))
        .sort((a, b) => b.duration - a.duration || a.order - b.order)
        .map(({ spec }) => spec);
    return sorted
      .map((spec, order) => ({ spec, order }))
      .sort((a, b) => rank(a.spec) - rank(b.spec) || a.order - b.order)
      .map(({ spec }) => spec);
  }
}
