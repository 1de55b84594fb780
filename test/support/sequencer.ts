import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Which test file starts first. Vitest runs the slowest files first when it has their durations
 * from an earlier run; a fresh clone has none, and by file size it would start with quick unit
 * files and leave a slow robustness file to run alone at the end. Without durations, the slow
 * folders go first (robustness, infra, integration, then unit), each in vitest's own order.
 */
const SLOW_FIRST = ['/test/robustness/', '/test/infra/', '/test/integration/', '/test/unit/'];

const rank = (spec: TestSpecification) => {
  const index = SLOW_FIRST.findIndex((folder) => spec.moduleId.includes(folder));
  return index === -1 ? SLOW_FIRST.length : index;
};

export default class SlowFoldersFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    if (sorted.every((spec) => this.ctx.cache.getTestSpecificationResult(spec))) return sorted;
    return sorted.map((spec, order) => ({ spec, order })).sort((a, b) => rank(a.spec) - rank(b.spec) || a.order - b.order).map(({ spec }) => spec);
  }
}
