import { writeFileSync } from 'node:fs';

/**
 * Preloaded (node --import) into the import command the benchmark runs: at exit, writes the
 * process's peak resident set size (kilobytes, from getrusage) and CPU time to BENCH_PEAK_RSS_FILE.
 */
const file = process.env.BENCH_PEAK_RSS_FILE;
if (file) {
  process.once('exit', () => {
    const usage = process.resourceUsage();
    writeFileSync(file, JSON.stringify({ maxRSS: usage.maxRSS, cpuMs: (usage.userCPUTime + usage.systemCPUTime) / 1000 }));
  });
}
