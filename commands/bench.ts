import { BENCH_OPTIONS } from '../bench/options.ts';
import { UsageError } from './cli/errors.ts';
import { command, execute } from './cli/run.ts';

/**
 * npm run bench: its command line read and `--help` answered as every command's are (cli/run.ts),
 * then the benchmark itself, bench/bench.ts, which reads the same arguments (bench/options.ts) and
 * stops what it started on its own signals (so this shell installs no handlers of its own).
 */
export const npmRunBench = command(
  {
    name: 'npm run bench',
    usage: [
      'npm run bench -- [--quick] [--import-gb <GB>] [--cold] [--capture] [--keeps-up] [--changes] ' +
        '[--size] [--first-load]',
    ],
    about: `
Measures, on this machine against DynamoDB Local, what a request costs and how long it takes: read
cost by page depth and team size, cold and warm time against a bare twin, a large import; and what a
change costs: the app's writes with the capture beside it and whether the sync keeps up (PostgreSQL
and MariaDB, started here), the seconds from a commit to its answer, the items and write units a change
writes, and a first load under DynamoDB's limits. Writes bench/RESULTS.md and bench/depth.svg
(docs/performance.md explains each part); --cold or a part's flag runs that part alone and rewrites its
section.`,
    options: BENCH_OPTIONS,
  },
  async ({ values }) => {
    const parts = Object.keys(values).filter((option) => !['quick', 'import-gb', 'cold'].includes(option));
    if (values.cold && parts.length > 0)
      throw new UsageError('--cold runs the cold starts alone: give it without the parts');
    if (!(Number(values['import-gb'] ?? 1) >= 0))
      throw new UsageError(`--import-gb takes a size in GB, not "${values['import-gb']}"`);
    await import('../bench/bench.ts');
  },
);

if (import.meta.main) {
  const { code, stdout, message } = await execute(npmRunBench, process.argv.slice(2));
  if (stdout) process.stdout.write(stdout);
  if (message) process.stderr.write(`${message}\n`);
  process.exit(code);
}
