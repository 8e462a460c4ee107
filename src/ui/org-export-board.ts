import type { Writable } from 'node:stream';
import type { BatchState, OrgExportEvent } from '../core/org-export/journal.js';
import { liveWidth } from './decorations.js';
import { counted, formatBytes, formatDuration } from './format.js';
import type { Output } from './output.js';
import { cut as cutToWidth, visible as widthOf } from './tables.js';
import { inertText } from '../support/outside-text.js';

// What an org export shows a human while it runs: a live board on a terminal, plain lines elsewhere.
// Both tell each batch's step as it changes (starting, waiting on the service, downloading,
// verifying, unlocking, deleting, done) with its migration, resumed batches from the first line on.

const REDRAW_MS = 100;

export interface OrgExportReporter {
  onEvent(event: OrgExportEvent): void;
  stop(): void;
}

const WAITING_TO_START = 'waiting for the service to take new starts';

/** What a journal state means for a batch still on the board. */
const STEP_OF_STATE: Record<BatchState, string> = {
  pending: 'starting',
  starting: 'starting',
  started: 'waiting',
  exported: 'exported',
  downloaded: 'saved',
  unlocked: 'released',
  done: 'done',
  failed: 'failed',
  skipped: 'skipped',
  narrowed: 'narrowed',
};

/** One line per step a batch takes, and per state the service reports of its migration. */
export class PlainLines implements OrgExportReporter {
  private readonly out: Output;
  /** The service's last state told per batch: each round reports it again. */
  private readonly serviceStates = new Map<number, string>();
  constructor(out: Output) {
    this.out = out;
  }

  onEvent(event: OrgExportEvent): void {
    let line = describe(event);
    // Its end (exported, failed) is the batch's next line.
    const waiting = event.type === 'migration' && event.state !== 'exported' && event.state !== 'failed';
    if (waiting && this.serviceStates.get(event.batch) !== event.state) {
      this.serviceStates.set(event.batch, event.state);
      line = `batch ${event.batch} (migration ${event.migrationId}): ${inertText(event.state)} on the service`;
    }
    if (!line) return;
    if (event.type === 'error' || event.type === 'notice') this.out.warn(line);
    else this.out.info(line);
  }

  stop(): void {}
}

/** The plain line of an event; none for progress (bytes, objects) and the service's rounds. */
function describe(event: OrgExportEvent): string | undefined {
  switch (event.type) {
    case 'plan': {
      const done = event.resumed && (event.done > 0 || event.archives > 0) ? `, ${event.done} already done, ${counted(event.archives, 'archive')} saved` : '';
      return `${event.resumed ? 'resuming' : 'planned'} ${counted(event.repositories, 'repository', 'repositories')} in ${counted(event.batches, 'batch', 'batches')}${done} (journal: ${inertText(event.journal)})`;
    }
    case 'batch':
      return `batch ${event.batch}: ${inertText(event.message)}`;
    case 'step':
      // Waiting to start, a batch has no migration yet.
      return event.migrationId === undefined
        ? `batch ${event.batch}: ${STEP_TEXT[event.step] ?? event.step}`
        : `batch ${event.batch} (migration ${event.migrationId}): ${STEP_TEXT[event.step] ?? event.step}`;
    case 'migration':
    case 'download':
    case 'verify':
      return undefined;
    case 'error': {
      const hint = event.hint ? `\n  hint: ${inertText(event.hint)}` : '';
      return `batch ${event.batch}${event.migrationId ? ` (migration ${event.migrationId})` : ''}: ${inertText(event.message)}${hint}`;
    }
    case 'notice':
      return inertText(event.message);
  }
}

/** A step in words, where its name is not already the words. */
const STEP_TEXT: Partial<Record<string, string>> = { 'waiting-to-start': WAITING_TO_START };

interface Running {
  batch: number;
  migrationId?: number | undefined;
  step: string;
  /** The migration's state as the service last reported it, while waiting. */
  service?: string | undefined;
  received: number;
  total: number | undefined;
  /** When the first bytes of this download came, and how many there were then (a resumed one starts at its `.part`'s size). */
  since: number;
  from?: number | undefined;
  check?: { stage: 'reading' | 'git'; done: number; total: number } | undefined;
}

/** One line per batch under way plus an overall line, redrawn in place at most ten times a second. */
export class LiveBoard implements OrgExportReporter {
  private readonly out: Output;
  private readonly stream: Writable & { columns?: number };
  private readonly running = new Map<number, Running>();
  /** The board's lines as last drawn, each measured again when it is erased: a resize may have wrapped it. */
  private drawn: string[] = [];
  private lastDraw = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly totals: Totals = { batches: 0, repositories: 0, done: 0, archives: 0, errors: 0 };
  /** Batches seen in this run, and those whose archive is counted (each counted once). */
  private readonly seen = new Set<number>();
  private readonly archived = new Set<number>();
  /** Repositories checked in this run, by batch: those of an archive being checked as git goes, all of a passed one. */
  private readonly checked = new Map<number, number>();
  /** Each batch's repositories, as its last `batch` event said. */
  private readonly repositoriesOf = new Map<number, number>();

  /** Gives stderr back to messages printed past the board (a request retried, a rate limit waited on). */
  private readonly detach: () => void;
  private readonly onResize = () => this.draw();

  constructor(out: Output, stream: Writable & { columns?: number }) {
    this.out = out;
    this.stream = stream;
    // Any other line on stderr goes above the board, not under it: one written under it would
    // leave the board's top lines behind at the next redraw, and be drawn over itself.
    this.detach = out.attachLive({ clear: () => this.erase(), redraw: () => this.draw() });
    stream.on?.('resize', this.onResize);
  }

  onEvent(event: OrgExportEvent): void {
    const now = Date.now();
    switch (event.type) {
      case 'plan': {
        // Counters start where the journal stands: what earlier runs finished is done.
        const { batches, repositories, done, archives } = event;
        Object.assign(this.totals, { batches, repositories, done, archives });
        this.print(describe(event) ?? '');
        return;
      }
      case 'batch': {
        this.repositoriesOf.set(event.batch, event.repositories);
        const entry = this.entry(event.batch, now, event.migrationId);
        entry.step = STEP_OF_STATE[event.state];
        if (event.state !== 'started') entry.service = undefined;
        this.countArchive(event.batch, event.state, event.resumed === true);
        if (event.state === 'skipped') {
          // The service refused all of it: no archive is to come.
          this.totals.batches--;
          this.running.delete(event.batch);
        }
        // Its migration failed: its repositories go on as two new batches.
        if (event.state === 'narrowed') {
          this.totals.batches++;
          this.running.delete(event.batch);
        }
        if (event.state === 'done') {
          this.totals.done += event.repositories;
          this.running.delete(event.batch);
          this.print(`✓ batch ${event.batch}: ${inertText(event.message)}`);
          return;
        }
        break;
      }
      case 'migration': {
        const entry = this.entry(event.batch, now, event.migrationId);
        // Exported, the wait is over; any other state (pending, exporting, failed) is waited on.
        entry.step = event.state === 'exported' ? 'exported' : 'waiting';
        entry.service = event.state;
        break;
      }
      case 'step': {
        const entry = this.entry(event.batch, now, event.migrationId);
        entry.step = event.step;
        entry.check = undefined;
        if (event.step === 'verified') this.checked.set(event.batch, this.repositoriesOf.get(event.batch) ?? this.checked.get(event.batch) ?? 0);
        if (event.step === 'downloading') Object.assign(entry, { received: 0, total: undefined, since: now, from: undefined });
        break;
      }
      case 'download': {
        const entry = this.entry(event.batch, now, event.migrationId);
        if (entry.step !== 'downloading') Object.assign(entry, { step: 'downloading', from: undefined });
        // The speed is of bytes that came in this run, from the first that did.
        if (entry.from === undefined) Object.assign(entry, { since: now, from: event.received });
        entry.received = event.received;
        entry.total = event.total;
        break;
      }
      case 'verify': {
        const entry = this.entry(event.batch, now, event.migrationId);
        entry.step = 'verifying';
        entry.check = { stage: event.stage, done: event.done, total: event.total };
        if (event.stage === 'git') this.checked.set(event.batch, Math.max(this.checked.get(event.batch) ?? 0, event.done));
        break;
      }
      case 'error':
        this.totals.errors++;
        // An archive that failed its check holds nothing checked; one verified before a later failure still does.
        if (this.running.get(event.batch)?.step === 'verifying') this.checked.delete(event.batch);
        this.running.delete(event.batch);
        this.print(this.out.theme.red(`✗ ${describe(event) ?? ''}`));
        return;
      case 'notice':
        this.print(this.out.theme.yellow(`warning: ${describe(event) ?? ''}`));
        return;
    }
    this.schedule(now);
  }

  /**
   * An archive is counted when a batch reaches `downloaded`, or is resumed past it (the plan counted
   * it); one counted that is fetched again (the batch goes back to `exported`) is taken off first.
   */
  private countArchive(batch: number, state: BatchState, resumed: boolean): void {
    const first = !this.seen.has(batch);
    this.seen.add(batch);
    if (resumed) {
      if (state === 'downloaded' || state === 'unlocked') this.archived.add(batch);
    } else if (state === 'downloaded' && !this.archived.has(batch)) {
      this.archived.add(batch);
      this.totals.archives++;
    } else if (state === 'exported') {
      if (this.archived.delete(batch)) this.totals.archives--;
      else if (first) this.totals.archives = Math.max(0, this.totals.archives - 1);
    }
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.stream.off?.('resize', this.onResize);
    this.detach();
    this.erase();
  }

  private entry(batch: number, now: number, migrationId: number | undefined): Running {
    let entry = this.running.get(batch);
    if (!entry) {
      entry = { batch, step: 'starting', received: 0, total: undefined, since: now };
      this.running.set(batch, entry);
    }
    if (migrationId !== undefined) entry.migrationId = migrationId;
    return entry;
  }

  private schedule(now: number): void {
    if (this.timer) return;
    const wait = Math.max(0, this.lastDraw + REDRAW_MS - now);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.draw();
    }, wait);
    this.timer.unref();
  }

  /** A finished line goes above the board, which is then drawn again below it. */
  private print(line: string): void {
    this.erase();
    this.stream.write(`${line}\n`);
    this.draw();
  }

  private erase(): void {
    const rows = this.rowsDrawn();
    if (rows > 0) this.stream.write(`\u001b[${rows}F\u001b[0J`);
    this.drawn = [];
  }

  /**
   * The rows the board takes now: each line drawn fits the width it was drawn at, but a terminal
   * narrowed since wraps it (tmux and most terminals reflow what they show), and moving up one row
   * a line would leave the rest of it, and the lines above, behind.
   */
  private rowsDrawn(): number {
    const columns = this.stream.columns && this.stream.columns > 0 ? this.stream.columns : undefined;
    return this.drawn.reduce((rows, line) => rows + (columns ? Math.max(1, Math.ceil(widthOf(line) / columns)) : 1), 0);
  }

  private draw(): void {
    // Before the plan there is nothing to count: a warning (a lock taken over) is printed alone.
    if (this.totals.batches === 0 && this.running.size === 0) return;
    // Short of the terminal's width (liveWidth): a line the echoed ^C wraps is left behind.
    const width = liveWidth(this.stream) ?? 80;
    const now = Date.now();
    // One form for every batch line: the long one when all fit, else the short one.
    const forms = [...this.running.values()].map((entry) => batchLine(entry, now));
    const long = forms.every((form) => widthOf(form.long) <= width);
    const lines = forms.map((form) => cut(long ? form.long : form.short, width));
    lines.push(totalsLine(this.totals, [...this.checked.values()].reduce((a, b) => a + b, 0), this.running.size, width));
    // Move up over the old board and overwrite it in one write: no blank frame, no flicker.
    const rows = this.rowsDrawn();
    const up = rows > 0 ? `\u001b[${rows}F` : '';
    this.stream.write(`${up}${lines.map((l) => `${l}\u001b[K`).join('\n')}\n\u001b[0J`);
    this.drawn = lines;
    this.lastDraw = now;
  }
}

/** A line in a long form and a short one: the long one where it fits. */
interface Forms {
  long: string;
  short: string;
}

/** Measured as the terminal shows it: a wide character (a CJK state from the service) takes two columns. */
function cut(line: string, width: number): string {
  return widthOf(line) > width ? cutToWidth(line, width) : line;
}

function batchLine(entry: Running, now: number): Forms {
  const { long, short } = stepOf(entry, now);
  // Starting, a batch has no migration yet.
  const id = entry.migrationId;
  return id === undefined
    ? { long: `  batch ${entry.batch}: ${long}`, short: `b${entry.batch}: ${short}` }
    : { long: `  batch ${entry.batch} migration ${id}: ${long}`, short: `b${entry.batch} m${id}: ${short}` };
}

function stepOf(entry: Running, now: number): Forms {
  if (entry.step === 'waiting-to-start') return { long: WAITING_TO_START, short: 'waiting to start' };
  if (entry.step === 'waiting') {
    const service = entry.service ? inertText(entry.service) : undefined;
    return { long: service ? `waiting (${service})` : 'waiting', short: service ? `wait (${service})` : 'wait' };
  }
  if (entry.step === 'downloading') {
    // A speed needs a second of bytes behind it: the first chunk over a few milliseconds is no rate.
    const seconds = (now - entry.since) / 1000;
    const rate = seconds >= 1 ? (entry.received - (entry.from ?? 0)) / seconds : undefined;
    const eta = entry.total && rate ? formatDuration(((entry.total - entry.received) / rate) * 1000) : undefined;
    const of = entry.total ? `/${formatBytes(entry.total)}` : '';
    const speed = rate === undefined ? '' : ` ${formatBytes(rate)}/s`;
    return {
      long: `downloading ${formatBytes(entry.received)}${of}${speed}${eta ? ` ETA ${eta}` : ''}`,
      short: `dl ${entry.total ? `${percent(entry.received, entry.total)}%` : formatBytes(entry.received)}${speed}${eta ? ` ${eta}` : ''}`,
    };
  }
  if (entry.step === 'verifying' && entry.check) {
    const { stage, done, total } = entry.check;
    return stage === 'git'
      ? { long: `verifying: git checked ${done}/${counted(total, 'repository', 'repositories')}`, short: `verify ${done}/${total} repos` }
      : { long: `verifying: read ${formatBytes(done)}/${formatBytes(total)}`, short: `verify read ${percent(done, total)}%` };
  }
  return { long: entry.step, short: entry.step };
}

interface Totals {
  batches: number;
  repositories: number;
  done: number;
  archives: number;
  errors: number;
}

/**
 * The totals in words where they fit; narrower, in short words, dropping whole the parts that
 * matter least (what git checked so far, then the batches running, each a line above) rather
 * than cutting one: the errors stay while anything but the repositories can.
 */
function totalsLine(t: Totals, checked: number, running: number, width: number): string {
  const ofChecked = checked > 0 ? ` · ${checked} checked` : '';
  const long = `${t.done}/${counted(t.repositories, 'repository', 'repositories')}${ofChecked} · ${t.archives}/${counted(t.batches, 'archive')} · ${counted(t.errors, 'error')} · ${running} running`;
  if (widthOf(long) <= width) return long;
  // In the order shown; `drop` is the order they go in, first the least useful.
  const parts = [
    { text: `${t.done}/${t.repositories}`, drop: Infinity },
    ...(checked > 0 ? [{ text: `${checked} checked`, drop: 1 }] : []),
    { text: `${t.archives}/${t.batches} arch`, drop: 3 },
    ...(t.errors > 0 ? [{ text: `${t.errors} err`, drop: 4 }] : []),
    { text: `${running} run`, drop: 2 },
  ];
  const line = () => parts.map((part) => part.text).join(' · ');
  while (parts.length > 1 && widthOf(line()) > width) {
    const least = parts.reduce((a, b) => (b.drop < a.drop ? b : a));
    parts.splice(parts.indexOf(least), 1);
  }
  return cut(line(), width);
}

function percent(done: number, total: number): number {
  return total > 0 ? Math.min(100, Math.floor((done / total) * 100)) : 0;
}
