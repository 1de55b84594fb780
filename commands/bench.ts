import { command, execute } from './cli/run.ts';

/**
 * npm run bench: its command line read and `--help` answered as every command's are (cli/run.ts),
 * then the benchmark itself, bench/bench.ts, which reads the same arguments and stops what it
 * started on its own signals (so this shell installs no handlers of its own).
 */
export const npmRunBench = command(
  {
    name: 'npm run bench',
    usage: ['npm run bench -- [--quick] [--import-gb <GB>] [--cold] [--changes]'],
    about: `
Measures, on this machine against DynamoDB Local, what a request costs and how long it takes: read
cost by page depth and team size, cold and warm time against a bare twin, a large import, what a
change writes and the seconds from a commit in PostgreSQL or MariaDB to its answer; writes
bench/RESULTS.md and bench/depth.svg (docs/performance.md explains each part).`,
    options: {
      quick: { type: 'boolean', help: 'a smoke run: small teams, few samples, a 20 MB import; writes nothing' },
      'import-gb': { type: 'string', value: '<GB>', help: 'the size of the import measured; default 1, 0 skips it' },
      cold: { type: 'boolean', help: 'only the cold starts against the bare twin, printed; writes nothing' },
      changes: {
        type: 'boolean',
        help: 'only what a change writes and how soon the sync serves it; rewrites those sections of RESULTS.md',
      },
    },
  },
  async () => void (await import('../bench/bench.ts')),
);

if (import.meta.main) {
  const { code, stdout, message } = await execute(npmRunBench, process.argv.slice(2));
  if (stdout) process.stdout.write(stdout);
  if (message) process.stderr.write(`${message}\n`);
  process.exit(code);
}
