import cliProgress from 'cli-progress';
import type { ImportProgress } from '../import/importer.ts';
import { holdTerminal } from './run.ts';
import { count } from './text.ts';

/** Files and imports smaller than these go without a display: they are over before a bar means anything. */
const MINIMUM_BYTES = 5_000_000;
const MINIMUM_ITEMS = 5_000;

/**
 * A sync's first pass shorter than this says nothing; past it, a log gets a line then and one a
 * minute after. A test shortens both (SYNC_PROGRESS_AFTER_MS, SYNC_PROGRESS_EVERY_MS: docs/testing.md):
 * a minute is longer than a test.
 */
const PASS_QUIET_MS = 3_000;
const PASS_LINE_EVERY_MS = 60_000;

/** A duration in ms from the environment when it is one (a whole number), else `otherwise`. */
const msSetting = (name: string, otherwise: number) => {
  const value = process.env[name]?.trim();
  return value && /^\d{1,9}$/.test(value) ? Number(value) : otherwise;
};

const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(bytes < 1e7 ? 1 : 0)} MB`;

export type ProgressDisplay = ReturnType<typeof progressDisplay>;

/**
 * The import's progress on stderr, for both passes: validating (bytes of the file read) and
 * writing (projects and daemons written). On a terminal, a bar per pass (cli-progress: it redraws
 * in place at a bounded rate, handles the cursor and the terminal's width, and leaves the final
 * state on screen); elsewhere (a CI log, a pipe), a plain line every 10%. A small import says
 * nothing: it is over before a bar means anything.
 */
export function progressDisplay() {
  const stream = process.stderr;
  let writingStarted = 0;
  let passStarted = 0;
  /**
   * When the last line of a pass was written to a log: none yet, so the first is due once the pass
   * is past its quiet time.
   */
  let lastPassLine = Number.NEGATIVE_INFINITY;
  const passQuietMs = msSetting('SYNC_PROGRESS_AFTER_MS', PASS_QUIET_MS);
  const passLineEveryMs = msSetting('SYNC_PROGRESS_EVERY_MS', PASS_LINE_EVERY_MS);
  /** The bar of the pass under way: each pass ends its own (when done, or stopped). */
  let bar: cliProgress.SingleBar | undefined;
  /** A bar hides the cursor and line wrapping: however the command ends, stopping the bar gives them back. */
  let releaseHold = () => {};
  let lastLine = '';

  const stopBar = () => {
    const shown = bar;
    bar = undefined;
    releaseHold();
    shown?.stop();
  };

  /**
   * One pass's state: a bar on a terminal, a line per 10% elsewhere. A bar ends when all is done, or,
   * where the total may still grow (a sync's pass counts its tokens once its teams are done), when
   * the command stops it: one bar for the whole pass, never one that starts again at 0%.
   */
  const show = (label: string, done: number, total: number, text: string, endsAtTotal = true) => {
    if (stream.isTTY) {
      if (!bar) {
        const unhold = holdTerminal(stopBar);
        if (!unhold) return; // the command is ending
        releaseHold = unhold;
        bar = new cliProgress.SingleBar(
          {
            stream,
            format: `${label.padEnd(15)} [{bar}] {percentage}% {text}`,
            barsize: 30,
            fps: 10,
            hideCursor: true,
            clearOnComplete: false,
          },
          cliProgress.Presets.legacy,
        );
        bar.start(Math.max(total, 1), 0, { text });
      }
      bar.setTotal(Math.max(total, 1));
      bar.update(done, { text });
      if (endsAtTotal && done >= total) stopBar();
      return;
    }
    const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
    const line = `${label} ${Math.floor(percent / 10)}`;
    if (line !== lastLine) {
      lastLine = line;
      stream.write(`${label} ${text} (${percent}%)\n`);
    }
  };

  return {
    validating(bytes: number, total: number) {
      if (total >= MINIMUM_BYTES) show('validating', bytes, total, `${megabytes(bytes)} of ${megabytes(total)}`);
    },
    importing(p: ImportProgress) {
      if (p.phase !== 'writing' || p.total < MINIMUM_ITEMS) return;
      if (p.done === 0) writingStarted = performance.now();
      const seconds = (performance.now() - writingStarted) / 1000;
      const rate = seconds > 0 && p.done > 0 ? `, ${count(Math.round(p.done / seconds))} items/s` : '';
      show('writing items', p.done, p.total, `${count(p.done)}/${count(p.total)}${rate}`);
    },
    /**
     * A sync's first full pass: teams, then tokens, done of the total. A bar on a terminal once the
     * pass has taken a few seconds; elsewhere (a log) a line then, and one a minute after.
     */
    passing(p: { teams: { done: number; total: number }; tokens: { done: number; total: number } }) {
      const now = performance.now();
      passStarted ||= now;
      if (now - passStarted < passQuietMs) return;
      const teams = `${count(p.teams.done)}/${count(p.teams.total)}`;
      const text = `teams ${teams}, tokens ${count(p.tokens.done)}/${count(p.tokens.total)}`;
      const done = p.teams.done + p.tokens.done;
      const total = p.teams.total + p.tokens.total;
      if (stream.isTTY) return show('first full pass', done, total, text, false);
      if (now - lastPassLine < passLineEveryMs) return;
      lastPassLine = now;
      stream.write(`first full pass: ${text}\n`);
    },
    /** Ends a bar still drawn (before printing anything else). */
    stop: stopBar,
  };
}
