import { writeFileSync } from 'node:fs';

/**
 * Preloaded (node --import) into the import command the benchmark runs: at exit, writes the
 * process's peak resident set size (kilobytes, from getrusage) to BENCH_PEAK_RSS_FILE.
 */
const file = process.env.BENCH_PEAK_RSS_FILE;
if (file) process.once('exit', () => writeFileSync(file, JSON.stringify({ maxRSS: process.resourceUsage().maxRSS })));
