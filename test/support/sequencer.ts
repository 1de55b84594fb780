import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Which test file starts first. Vitest runs the slowest files first when it has their durations
 * from an earlier run; a fresh clone has none, and by file size it would start with quick unit
 * files and leave a slow file to run alone at the end. Without durations, files start in the
 * order of these path prefixes (the command-line tests, which spend their time in the processes
 * they start, then robustness, infra, the other integration tests, unit), each group in vitest's
 * own order.
 */
const SLOW_FIRST = [
  '/test/integration/command',
  '/test/robustness/',
  '/test/infra/',
  '/test/integration/',
  '/test/unit/',
];

const rank = (spec: TestSpecification) => {
  const index = SLOW_FIRST.findIndex((prefix) => spec.moduleId.includes(prefix));
  return index === -1 ? SLOW_FIRST.length : index;
};

export default class SlowFoldersFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    if (sorted.every((spec) => this.ctx.cache.getTestSpecificationResult(spec))) return sorted;
    return sorted
      .map((spec, order) => ({ spec, order }))
      .sort((a, b) => rank(a.spec) - rank(b.spec) || a.order - b.order)
      .map(({ spec }) => spec);
  }
}
