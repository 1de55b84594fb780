import type { ImportProgress } from './importer.ts';

const PHASES: Record<ImportProgress['phase'], string> = { items: 'writing items', switch: 'switching teams', cleanup: 'removing old data' };

/**
 * Import progress on stderr: a redrawn bar on a terminal, a line every 10% elsewhere (CI logs).
 */
export function progressReporter(stream: NodeJS.WriteStream = process.stderr, minimumItems = 5_000) {
  const started = performance.now();
  let lastPhase = '';
  let lastDecile = -1;
  let lastDraw = 0;
  let quiet = false;
  return (p: ImportProgress) => {
    // A small import finishes before a bar means anything; say nothing until a large one.
    if (p.phase === 'items' && p.done === 0) quiet = p.total < minimumItems;
    if (quiet) return;
    const fraction = p.total === 0 ? 1 : p.done / p.total;
    const seconds = (performance.now() - started) / 1000;
    const rate = p.phase === 'items' && seconds > 0 ? `  ${Math.round(p.done / seconds).toLocaleString('en')} items/s` : '';
    const text = `${PHASES[p.phase]} ${p.done.toLocaleString('en')}/${p.total.toLocaleString('en')}${rate}`;
    if (stream.isTTY) {
      const now = performance.now();
      if (p.done !== p.total && now - lastDraw < 100) return;
      lastDraw = now;
      const width = 30;
      const filled = Math.round(fraction * width);
      stream.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.round(fraction * 100)).padStart(3)}% ${text}\x1b[K`);
      if (p.done === p.total) stream.write('\n');
      return;
    }
    const decile = Math.floor(fraction * 10);
    if (p.phase !== lastPhase || decile !== lastDecile) {
      lastPhase = p.phase;
      lastDecile = decile;
      stream.write(`${String(Math.round(fraction * 100)).padStart(3)}% ${text}\n`);
    }
  };
}
