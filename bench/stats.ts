/** Small statistics and formatting helpers for bench/bench.ts. */

/** The p-quantile (0..1) of samples, nearest rank: p99 of 300 samples is the 297th smallest. */
export function quantile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(p * sorted.length)));
  return sorted[rank - 1]!;
}

export const median = (samples: readonly number[]) => quantile(samples, 0.5);

/** Milliseconds with a precision that suits their size. */
export function ms(value: number): string {
  if (!Number.isFinite(value)) return '–';
  if (value >= 100) return value.toFixed(0);
  if (value >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

export const ratio = (value: number) => (Number.isFinite(value) ? `${value.toFixed(2)}×` : '–');
/** For ratios judged against a threshold: 1.104 must not print as 1.10. */
export const ratio3 = (value: number) => (Number.isFinite(value) ? `${value.toFixed(3)}×` : '–');
export const int = (value: number) => Math.round(value).toLocaleString('en');
export const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} KB`;

/** A GitHub-flavoured Markdown table; `align` holds 'l' or 'r' per column (default: left). */
export function markdownTable(header: string[], rows: (string | number)[][], align: string = ''): string {
  const sep = header.map((_, i) => (align[i] === 'r' ? '---:' : '---'));
  const line = (cells: (string | number)[]) => `| ${cells.map(String).join(' | ')} |`;
  return [line(header), line(sep), ...rows.map(line)].join('\n');
}

/** min / median / max of per-run ratios, and how many runs: `1.021× / 1.034× / 1.062× (n=15)`. */
export function spread(values: readonly number[]): string {
  if (values.length === 0) return '–';
  const sorted = [...values].sort((a, b) => a - b);
  return `${ratio3(sorted[0]!)} / ${ratio3(median(sorted))} / ${ratio3(sorted[sorted.length - 1]!)} (n=${values.length})`;
}
