import type { Writable } from 'node:stream';
import { stripVTControlCharacters } from 'node:util';
import { formatBytes, formatDuration } from './format.js';

/** A spinner line; a silent object when decorations are off (pipes, files, --json, --quiet). */
export interface Spinner {
  text(text: string): void;
  succeed(text: string): void;
  fail(text: string): void;
  stop(): void;
  /** Takes the line off the terminal, so another can be written where it was… */
  clear(): void;
  /** …and draws it again below that one. */
  redraw(): void;
}

const silent: Spinner = { text() {}, succeed() {}, fail() {}, stop() {}, clear() {}, redraw() {} };

/**
 * A terminal we can draw on: a TTY that reports a width. On 0 columns (`script`, some
 * `docker exec -t`) ora computes an infinite number of lines to clear and never returns.
 */
export function drawable(stream: { isTTY?: boolean; columns?: number }): boolean {
  return Boolean(stream.isTTY) && Number.isInteger(stream.columns) && (stream.columns as number) > 0;
}

export async function createSpinner(enabled: boolean, stream: Writable, text: string): Promise<Spinner> {
  if (!enabled || !drawable(stream as { isTTY?: boolean; columns?: number })) return silent;
  const { default: ora } = await import('ora');
  // The spinner's frame and a space come before the text; the line stays within liveWidth.
  const fitted = (line: string) => {
    const width = liveWidth(stream as { columns?: number });
    const room = width === undefined ? Infinity : width - 2;
    return stripVTControlCharacters(line).length <= room ? line : `${stripVTControlCharacters(line).slice(0, Math.max(1, room - 1))}…`;
  };
  const spinner = ora({ text: fitted(text), stream, discardStdin: false }).start();
  // A terminal shrunk to 0 columns mid-way: stop drawing at once (the resize event comes before
  // ora's next frame) and end with plain lines.
  let live = true;
  const onResize = () => {
    if (drawable(stream as { isTTY?: boolean; columns?: number })) return;
    live = false;
    spinner.stop();
    stream.off('resize', onResize);
  };
  stream.on('resize', onResize);
  const end = (symbol: string, final: string, method: 'succeed' | 'fail') => {
    stream.off('resize', onResize);
    if (live) spinner[method](final);
    else stream.write(`${symbol} ${final}\n`);
    live = false;
  };
  return {
    text: (next) => {
      if (live) spinner.text = fitted(next);
    },
    succeed: (final) => end('✓', final, 'succeed'),
    fail: (final) => end('✗', final, 'fail'),
    stop: () => {
      stream.off('resize', onResize);
      if (live) spinner.stop();
      live = false;
    },
    clear: () => {
      if (live) spinner.clear();
    },
    redraw: () => {
      if (live) spinner.render();
    },
  };
}

/**
 * The most a live line (redrawn in place) may hold: 3 columns short of the terminal's width, so
 * that the `^C` a terminal echoes after it still fits on its line. A line that wraps, even by the
 * echo, is left behind: the redraw and the clearing before a message only reach the last line.
 */
export function liveWidth(stream: { columns?: number }): number | undefined {
  const columns = stream.columns;
  return columns && columns > 0 ? Math.max(1, columns - LIVE_MARGIN) : undefined;
}

const LIVE_MARGIN = 3;

/** The bar at its full length, and the shortest worth drawing (brackets included). */
const BAR_WIDTH = 26;
const BAR_NARROWEST = 8;

/**
 * A progress line that fits `width`: the numbers first (the rate, then the ETA, the percentage and
 * the total given up only when nothing else fits), the bar in front with what room is left.
 */
function barLine(numbers: string[], fraction: number | undefined, width: number | undefined): string {
  const shown = [...numbers];
  const text = () => shown.join('  ');
  while (width !== undefined && shown.length > 1 && text().length > width) shown.pop();
  if (fraction === undefined) return text();
  const room = Math.min(BAR_WIDTH, width === undefined ? BAR_WIDTH : width - text().length - 2);
  if (room < BAR_NARROWEST) return text();
  const inner = room - 2;
  const filled = Math.min(inner, Math.round(fraction * inner));
  return `[${'#'.repeat(filled)}${'-'.repeat(inner - filled)}]  ${text()}`;
}

export interface ProgressUpdate {
  received: number;
  total: number | undefined;
  resumedFrom: number;
}

/** A waiting line appears only when the wait is long enough to notice: no flash before each download. */
const WAITING_SHOWN_AFTER_MS = 300;

/**
 * Bytes, rate and ETA on one line redrawn in place; before the first byte, what it waits for and
 * how long it has waited. Nothing at all when decorations are off.
 */
export class ProgressBar {
  private lastDraw = 0;
  /** The line holds the bar now (a message printed since has taken it). */
  private shown = false;
  private readonly started = Date.now();
  private readonly stream: Writable;
  private readonly enabled: boolean;
  private ticker: NodeJS.Timeout | undefined;
  private waitingShown = false;

  constructor(enabled: boolean, stream: Writable) {
    this.enabled = enabled;
    this.stream = stream;
  }

  /** Until the next update: `<what>… <elapsed> · <note>`, redrawn each second (storage slow to answer). */
  waiting(what: string, note: string): void {
    if (!this.enabled) return;
    this.stopWaiting();
    const since = Date.now();
    const draw = () => {
      this.waitingShown = true;
      this.draw(`${what}… ${formatDuration(Date.now() - since)} · ${note}`);
      this.ticker = setTimeout(draw, 1000).unref();
    };
    this.ticker = setTimeout(draw, WAITING_SHOWN_AFTER_MS).unref();
  }

  update(progress: ProgressUpdate): void {
    if (!this.enabled) return;
    const replacing = this.waitingShown;
    this.stopWaiting();
    const now = Date.now();
    if (!replacing && this.shown && now - this.lastDraw < 100 && progress.received !== progress.total) return;
    const seconds = Math.max(0.001, (now - this.started) / 1000);
    const rate = (progress.received - progress.resumedFrom) / seconds;
    const numbers = [formatBytes(progress.received)];
    let fraction: number | undefined;
    if (progress.total) {
      fraction = progress.received / progress.total;
      numbers.push(`/ ${formatBytes(progress.total)}`, `${Math.floor(fraction * 100)}%`);
      if (rate > 0) numbers.push(`ETA ${formatDuration(((progress.total - progress.received) / rate) * 1000)}`);
    }
    numbers.push(`${formatBytes(rate)}/s`);
    this.draw(barLine(numbers, fraction, liveWidth(this.stream as { columns?: number })));
  }

  /** Clears the bar's line so that a message starts on a line of its own; the next update draws it again. */
  clear(): void {
    if (!this.shown) return;
    this.stream.write('\r\x1b[2K');
    this.shown = false;
  }

  done(): void {
    this.stopWaiting();
    this.clear();
    this.onDone?.();
  }

  /** Called once the bar is done (the Output stops clearing it before its messages). */
  onDone?: () => void;

  private draw(line: string): void {
    this.lastDraw = Date.now();
    // Shorter than the terminal: a wrapped line is not cleared by the next redraw.
    const width = liveWidth(this.stream as { columns?: number });
    this.stream.write(`\r\x1b[2K${width === undefined ? line : line.slice(0, width)}`);
    this.shown = true;
  }

  private stopWaiting(): void {
    clearTimeout(this.ticker);
    this.ticker = undefined;
    this.waitingShown = false;
  }
}
