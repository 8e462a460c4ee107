import type { Writable } from 'node:stream';
import { formatBytes, formatDuration } from './format.js';

/** A spinner line; a silent object when decorations are off (pipes, files, --json, --quiet). */
export interface Spinner {
  text(text: string): void;
  succeed(text: string): void;
  fail(text: string): void;
  stop(): void;
}

const silent: Spinner = { text() {}, succeed() {}, fail() {}, stop() {} };

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
  const spinner = ora({ text, stream, discardStdin: false }).start();
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
      if (live) spinner.text = next;
    },
    succeed: (final) => end('✓', final, 'succeed'),
    fail: (final) => end('✗', final, 'fail'),
    stop: () => {
      stream.off('resize', onResize);
      if (live) spinner.stop();
      live = false;
    },
  };
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
    const parts = [formatBytes(progress.received)];
    if (progress.total) {
      const fraction = progress.received / progress.total;
      const width = 24;
      const filled = Math.round(fraction * width);
      parts.unshift(`[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`);
      parts.push(`/ ${formatBytes(progress.total)}`, `${Math.floor(fraction * 100)}%`);
      if (rate > 0) parts.push(`ETA ${formatDuration(((progress.total - progress.received) / rate) * 1000)}`);
    }
    parts.push(`${formatBytes(rate)}/s`);
    this.draw(parts.join('  '));
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
    // Never longer than the terminal: a wrapped line is not cleared by the next redraw.
    const columns = (this.stream as { columns?: number }).columns;
    this.stream.write(`\r\x1b[2K${columns && columns > 1 ? line.slice(0, columns - 1) : line}`);
    this.shown = true;
  }

  private stopWaiting(): void {
    clearTimeout(this.ticker);
    this.ticker = undefined;
    this.waitingShown = false;
  }
}
