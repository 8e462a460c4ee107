import type { Writable } from 'node:stream';
import type { ChalkInstance } from 'chalk';
import type { BatchRecord, OrgExportEvent } from '../core/org-export/journal.js';
import type { OrgExportResult } from '../core/org-export/run.js';
import { liveWidth } from './decorations.js';
import { counted, formatBytes, formatDuration } from './format.js';
import type { Output } from './output.js';
import { KEY, renderTable, type TableLayout } from './tables.js';
import { inertText } from '../support/outside-text.js';

/** Below this width live lines would wrap and break the redraw; plain lines are used instead. */
const MIN_LIVE_COLUMNS = 40;
const REDRAW_MS = 100;

interface Running {
  batch: number;
  migrationId?: number | undefined;
  state: string;
  received: number;
  total: number | undefined;
  since: number;
}

export interface OrgExportReporter {
  onEvent(event: OrgExportEvent): void;
  stop(): void;
}

/**
 * Progress of an organization export: with --json one line per event on stdout; on a wide enough
 * terminal one live line per running migration and an overall line, redrawn in place; otherwise
 * plain lines, one per step.
 */
export function createOrgExportReporter(out: Output, stderr: Writable & { columns?: number }): OrgExportReporter {
  if (out.json) {
    return {
      onEvent: (event) => {
        // Byte counts would flood a pipe; the batch events say when each download ends.
        if (event.type !== 'download') out.line(event, () => '');
      },
      stop: () => {},
    };
  }
  const live = out.decorated && (stderr.columns ?? 0) >= MIN_LIVE_COLUMNS;
  return live ? new LiveBoard(out, stderr) : new PlainLines(out);
}

class PlainLines implements OrgExportReporter {
  private readonly out: Output;
  constructor(out: Output) {
    this.out = out;
  }

  onEvent(event: OrgExportEvent): void {
    const line = describe(event);
    if (!line) return;
    if (event.type === 'error' || event.type === 'notice') this.out.warn(line);
    else this.out.info(line);
  }

  stop(): void {}
}

function describe(event: OrgExportEvent): string | undefined {
  switch (event.type) {
    case 'plan': {
      const done = event.resumed && (event.done > 0 || event.archives > 0) ? `, ${event.done} already done, ${counted(event.archives, 'archive')} saved` : '';
      return `${event.resumed ? 'resuming' : 'planned'} ${counted(event.repositories, 'repository', 'repositories')} in ${counted(event.batches, 'batch', 'batches')}${done} (journal: ${inertText(event.journal)})`;
    }
    case 'batch':
      return `batch ${event.batch}: ${inertText(event.message)}`;
    case 'migration':
      return undefined;
    case 'download':
      return undefined;
    case 'error': {
      const hint = event.hint ? `\n  hint: ${inertText(event.hint)}` : '';
      return `batch ${event.batch}${event.migrationId ? ` (migration ${event.migrationId})` : ''}: ${inertText(event.message)}${hint}`;
    }
    case 'notice':
      return inertText(event.message);
  }
}

/** One line per running migration plus an overall line, redrawn in place at most ten times a second. */
class LiveBoard implements OrgExportReporter {
  private readonly out: Output;
  private readonly stream: Writable & { columns?: number };
  private readonly running = new Map<number, Running>();
  private drawn = 0;
  private lastDraw = 0;
  private timer: NodeJS.Timeout | undefined;
  private totals = { batches: 0, repositories: 0, done: 0, archives: 0, errors: 0, bytes: 0 };
  /** Batches seen in this run, and those whose archive this run saved (each counted once). */
  private readonly seen = new Set<number>();
  private readonly archived = new Set<number>();

  constructor(out: Output, stream: Writable & { columns?: number }) {
    this.out = out;
    this.stream = stream;
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
        const entry = this.entry(event.batch, now);
        entry.state = event.state;
        if (event.migrationId) entry.migrationId = event.migrationId;
        this.countArchive(event.batch, event.state);
        // The service refused all of it: no archive is to come.
        if (event.state === 'skipped') {
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
        }
        break;
      }
      case 'migration': {
        this.seen.add(event.batch);
        const entry = this.entry(event.batch, now);
        entry.state = event.state;
        entry.migrationId = event.migrationId;
        break;
      }
      case 'download': {
        const entry = this.entry(event.batch, now);
        if (entry.state !== 'downloading') {
          entry.state = 'downloading';
          entry.since = now;
        }
        entry.received = event.received;
        entry.total = event.total;
        break;
      }
      case 'error':
        this.totals.errors++;
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
   * An archive is counted when a batch reaches `downloaded`; one counted from the journal that is
   * fetched again (the batch's first step in this run goes back to `exported`) is taken off first.
   */
  private countArchive(batch: number, state: string): void {
    const first = !this.seen.has(batch);
    this.seen.add(batch);
    if (state === 'downloaded' && !this.archived.has(batch)) {
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
    this.erase();
  }

  private entry(batch: number, now: number): Running {
    let entry = this.running.get(batch);
    if (!entry) {
      entry = { batch, state: 'pending', received: 0, total: undefined, since: now };
      this.running.set(batch, entry);
    }
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
    if (this.drawn === 0) return;
    this.stream.write(`\u001b[${this.drawn}F\u001b[0J`);
    this.drawn = 0;
  }

  private draw(): void {
    // Short of the terminal's width (liveWidth): a line the echoed ^C wraps is left behind.
    const width = liveWidth(this.stream) ?? 80;
    const now = Date.now();
    const lines = [...this.running.values()].map((entry) => fit(this.line(entry, now), width));
    const t = this.totals;
    lines.push(
      fit(
        `${t.done}/${counted(t.repositories, 'repository', 'repositories')} · ${t.archives}/${counted(t.batches, 'archive')} · ${counted(t.errors, 'error')} · ${this.running.size} running`,
        width,
      ),
    );
    // Move up over the old board and overwrite it in one write: no blank frame, no flicker.
    const up = this.drawn > 0 ? `\u001b[${this.drawn}F` : '';
    this.stream.write(`${up}${lines.map((l) => `${l}\u001b[K`).join('\n')}\n\u001b[0J`);
    this.drawn = lines.length;
    this.lastDraw = now;
  }

  private line(entry: Running, now: number): string {
    const id = entry.migrationId ? `migration ${entry.migrationId}` : 'migration ?';
    let detail = entry.state;
    if (entry.state === 'downloading') {
      const seconds = Math.max(0.001, (now - entry.since) / 1000);
      const rate = entry.received / seconds;
      const eta = entry.total && rate > 0 ? ` ETA ${formatDuration(((entry.total - entry.received) / rate) * 1000)}` : '';
      detail = `downloading ${formatBytes(entry.received)}${entry.total ? `/${formatBytes(entry.total)}` : ''} ${formatBytes(rate)}/s${eta}`;
    }
    return `  batch ${entry.batch} ${id}: ${detail}`;
  }
}

function fit(line: string, width: number): string {
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

/**
 * The final table: one row per batch, its state, archive size and verification result. Off a
 * terminal it is plain tab-separated rows only; the closing line is then the caller's to print apart.
 */
export function orgExportTable(result: OrgExportResult, theme: ChalkInstance, layout: TableLayout): string {
  const rows = result.batches.map((batch: BatchRecord) => [
    String(batch.index),
    String(batch.repositories.length),
    batch.migrationIds.join(', ') || '-',
    batch.error ? theme.red(batch.state) : batch.state === 'done' ? theme.green('done') : batch.state === 'skipped' ? theme.yellow('skipped') : batch.state,
    batch.archive ? formatBytes(batch.archive.bytes) : '-',
    batch.archive ? (batch.archive.verified ? 'verified' : theme.yellow('NOT verified')) : '-',
    problemOf(batch),
  ]);
  // On a narrow terminal the batch and its state stay whole; the rest is cut to fit.
  const table = renderTable(['batch', 'repos', 'migration', 'state', 'size', 'archive', 'problem'], rows, theme, layout, [
    { rank: KEY },
    { rank: 0 },
    { rank: 1 },
    { rank: KEY - 1 },
    { rank: 1 },
    { rank: 2 },
    { rank: 2 },
  ]);
  return layout.plain ? table : `${table}\n${orgExportFooter(result)}`;
}

/** A batch's error, and the repositories the service refused for it. */
function problemOf(batch: BatchRecord): string {
  const why = batch.skipped?.some((s) => s.migrationId !== undefined) ? 'at fault' : 'refused by the service';
  const skipped = batch.skipped?.length ? `skipped ${batch.skipped.length} ${why}: ${inertText(shortList(batch.skipped.map((s) => s.name), 3))}` : '';
  return [batch.error ? inertText(batch.error.message) : '', skipped].filter(Boolean).join('; ');
}

/** How many repositories are safe, which were skipped and why, and where to look when some are not. */
export function orgExportFooter(result: OrgExportResult): string {
  const failed = result.batches.filter((b) => b.error || !['done', 'skipped', 'narrowed'].includes(b.state)).map((b) => b.index);
  const count = !result.verify
    ? `${result.archivedRepositories}/${counted(result.repositories, 'repository', 'repositories')} in archives, none verified (--no-verify)`
    : `${result.verifiedRepositories}/${counted(result.repositories, 'repository', 'repositories')} in verified archives`;
  const lines = [
    failed.length === 0
      ? count
      : `${count}; look at batch ${failed.join(', ')} in ${inertText(result.journalPath)}, then run the same command again`,
  ];
  if (result.skipped.length > 0) {
    const why = result.skipped.some((s) => s.migrationId !== undefined) ? 'the service refused or could not export' : 'the service refused';
    lines.push(`skipped ${counted(result.skipped.length, 'repository', 'repositories')} ${why}:`);
    const shown = result.skipped.slice(0, SKIPPED_SHOWN);
    for (const s of shown) lines.push(`  ${inertText(s.name)} (batch ${s.batch}): ${inertText(s.reason)}`);
    if (result.skipped.length > shown.length) lines.push(`  … and ${result.skipped.length - shown.length} more (each with its reason in the journal and in --json)`);
  }
  return lines.join('\n');
}

/** Skipped repositories named one a line at the end; the rest are counted (the journal and --json have all). */
const SKIPPED_SHOWN = 20;

function shortList(names: string[], shown: number): string {
  return names.length > shown ? `${names.slice(0, shown).join(', ')}, … and ${names.length - shown} more` : names.join(', ');
}

/** What `export --output-dir … --dry-run` prints: the plan, and what the journal says is done of it. */
export interface DryRun {
  dry_run: true;
  journal: string;
  resumed: boolean;
  repositories: number;
  batches: {
    batch: number;
    repositories: string[];
    state: BatchRecord['state'];
    migration_ids: number[];
    /** Kept from the journal, or planned by this run. */
    planned: 'journal' | 'new';
    archive?: BatchRecord['archive'];
  }[];
  dropped_batches: number;
  to_start: number;
}

/** The plan as a table (batch, repositories, first and last, state per the journal), then what a run would do. */
export function dryRunTable(plan: DryRun, theme: ChalkInstance, layout: TableLayout): string {
  const rows = plan.batches.map((b) => [
    String(b.batch),
    String(b.repositories.length),
    inertText(b.repositories.length > 1 ? `${b.repositories[0]} … ${b.repositories.at(-1)}` : (b.repositories[0] ?? '-')),
    b.migration_ids.join(', ') || '-',
    b.state === 'done' ? theme.green('done') : b.state,
    b.planned,
  ]);
  const table = renderTable(['batch', 'repos', 'repositories', 'migration', 'state', 'planned'], rows, theme, layout, [
    { rank: KEY },
    { rank: 0 },
    { rank: 1 },
    { rank: 1 },
    { rank: KEY - 1 },
    { rank: 2 },
  ]);
  return layout.plain ? table : `${table}\n${dryRunFooter(plan)}`;
}

/** What a run would do with the plan; off a terminal the caller prints it on stderr. */
export function dryRunFooter(plan: DryRun): string {
  const done = plan.batches.filter((b) => b.state === 'done').length;
  return [
    `dry run: ${counted(plan.repositories, 'repository', 'repositories')} in ${counted(plan.batches.length, 'batch', 'batches')}; ${done} done, ${plan.to_start} to start, ${plan.batches.length - done - plan.to_start} under way (journal: ${inertText(plan.journal)}${plan.resumed ? '' : ', none yet'})`,
    ...(plan.dropped_batches > 0 ? [plan.dropped_batches === 1 ? '1 finished batch of the journal holds no repository of the list and is left out (its archive stays)' : `${plan.dropped_batches} finished batches of the journal hold no repository of the list and are left out (their archives stay)`] : []),
    'nothing was sent to the service and nothing was written',
  ].join('\n');
}
