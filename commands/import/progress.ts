import cliProgress from 'cli-progress';
import { holdTerminal } from '../cli/run.ts';
import { count } from '../cli/text.ts';
import type { ImportProgress } from './importer.ts';

/**
 * The import's progress on stderr, for both passes: validating (bytes of the file read) and
 * writing (projects and daemons written). On a terminal, a bar per pass (cli-progress: it redraws
 * in place at a bounded rate, handles the cursor and the terminal's width, and leaves the final
 * state on screen); elsewhere (a CI log, a pipe), a plain line every 10%. A small import says
 * nothing: it is over before a bar means anything.
 */
export interface ProgressDisplay {
  validating(bytes: number, total: number): void;
  importing(progress: ImportProgress): void | Promise<void>;
  /** Ends a bar still drawn (before printing anything else). */
  stop(): void;
}

export interface ProgressOptions {
  stream?: NodeJS.WriteStream;
  /** Files smaller than this validate without a display. */
  minimumBytes?: number;
  /** Imports of fewer items write without a display. */
  minimumItems?: number;
}

const PHASES: Record<ImportProgress['phase'] | 'validating', string> = {
  validating: 'validating',
  writing: 'writing items',
  switching: 'switching teams',
};

const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(bytes < 1e7 ? 1 : 0)} MB`;

export function progressDisplay(options: ProgressOptions = {}): ProgressDisplay {
  const stream = options.stream ?? process.stderr;
  const minimumBytes = options.minimumBytes ?? 5_000_000;
  const minimumItems = options.minimumItems ?? 5_000;
  let writingStarted = performance.now();
  let bar: cliProgress.SingleBar | undefined;
  let barPhase = '';
  /** A bar hides the cursor and line wrapping: however the command ends, stopping the bar gives them back. */
  let releaseHold = () => {};
  let lastLine = { phase: '', decile: -1 };

  const stopBar = () => {
    const shown = bar;
    bar = undefined;
    barPhase = '';
    releaseHold();
    shown?.stop();
  };

  /** One phase's state: a bar on a terminal, a line per 10% elsewhere. */
  const show = (phase: keyof typeof PHASES, done: number, total: number, text: string) => {
    if (stream.isTTY) {
      if (barPhase !== phase) {
        stopBar();
        bar = new cliProgress.SingleBar({
          stream, format: `${PHASES[phase].padEnd(15)} [{bar}] {percentage}% {text}`, barsize: 30, fps: 10, hideCursor: true, clearOnComplete: false,
        }, cliProgress.Presets.legacy);
        bar.start(Math.max(total, 1), 0, { text });
        barPhase = phase;
        releaseHold = holdTerminal(stopBar);
      }
      bar!.setTotal(Math.max(total, 1));
      bar!.update(done, { text });
      if (done >= total) stopBar();
      return;
    }
    const decile = total === 0 ? 10 : Math.floor((done / total) * 10);
    if (phase !== lastLine.phase || decile !== lastLine.decile) {
      lastLine = { phase, decile };
      stream.write(`${PHASES[phase]} ${text} (${total === 0 ? 100 : Math.floor((done / total) * 100)}%)\n`);
    }
  };

  let quietImport = false;
  return {
    validating(bytes, total) {
      if (total < minimumBytes) return;
      show('validating', bytes, total, `${megabytes(bytes)} of ${megabytes(total)}`);
    },
    importing(p) {
      if (p.phase === 'writing' && p.done === 0) {
        quietImport = p.total < minimumItems;
        writingStarted = performance.now();
      }
      if (quietImport || p.phase !== 'writing') return;
      const seconds = (performance.now() - writingStarted) / 1000;
      const rate = seconds > 0 && p.done > 0 ? `, ${count(Math.round(p.done / seconds))} items/s` : '';
      show('writing', p.done, p.total, `${count(p.done)}/${count(p.total)}${rate}`);
    },
    stop: stopBar,
  };
}
