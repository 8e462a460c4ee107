import type { Writable } from 'node:stream';
import type { ChalkInstance } from 'chalk';
import type { BatchRecord, BatchState, OrgExportEvent } from '../core/org-export/journal.js';
import type { OrgExportResult } from '../core/org-export/run.js';
import { counted, formatBytes } from './format.js';
import { LiveBoard, type OrgExportReporter, PlainLines } from './org-export-board.js';
import type { Output } from './output.js';
import { KEY, renderTable, type TableLayout } from './tables.js';
import { inertText } from '../support/outside-text.js';

/** Below this width live lines would wrap and break the redraw; plain lines are used instead. */
const MIN_LIVE_COLUMNS = 40;

/**
 * Progress of an organization export: with --json one line per event on stdout (jsonEvent); on a
 * wide enough terminal one live line per batch under way and an overall line, redrawn in place;
 * otherwise plain lines, one per step.
 */
export function createOrgExportReporter(out: Output, stderr: Writable & { columns?: number }): OrgExportReporter {
  if (out.json) {
    return {
      onEvent: (event) => {
        // Byte and object counts would flood a pipe; the step events say when each download and check begins and ends.
        if (event.type !== 'download' && event.type !== 'verify') out.line(jsonEvent(event), () => '');
      },
      stop: () => {},
    };
  }
  const live = out.decorated && (stderr.columns ?? 0) >= MIN_LIVE_COLUMNS;
  return live ? new LiveBoard(out, stderr) : new PlainLines(out);
}

/**
 * An event as --json prints it: keys in snake_case, as the service's own fields and the summary's.
 * The journal's `unlocked` state is the step after the archive is on disk, which unlocks only with
 * --unlock: it is printed `released`, with `repositories_unlocked` saying whether it did.
 */
function jsonEvent(event: OrgExportEvent): Record<string, unknown> {
  const shown = snakeKeys(event);
  if (event.type === 'batch') shown.state = shownState(event.state);
  return shown;
}

/**
 * A journal state as it is shown (the events, the table, the summary, the dry run): `unlocked`, the
 * step after the archive is on disk, unlocks only with --unlock, so it is shown `released`.
 */
export function shownState(state: BatchState): Exclude<BatchState, 'unlocked'> | 'released' {
  return state === 'unlocked' ? 'released' : state;
}

/** An object's own keys in snake_case (`gitObjectsChecked` → `git_objects_checked`), for --json. */
export function snakeKeys(record: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), value]));
}

/**
 * The final table: one row per batch, its state, archive size and verification result. Off a
 * terminal it is plain tab-separated rows only; the closing line is then the caller's to print apart.
 */
export function orgExportTable(result: OrgExportResult, theme: ChalkInstance, layout: TableLayout): string {
  const rows = result.batches.map((batch: BatchRecord) => [
    String(batch.index),
    // What the batch held as planned: those the service refused or found at fault are no longer
    // among its repositories (a skipped batch has none), and PROBLEM names them.
    String(batch.repositories.length + (batch.skipped?.length ?? 0)),
    batch.migrationIds.join(', ') || '-',
    batch.error ? theme.red(shownState(batch.state)) : batch.state === 'done' ? theme.green('done') : batch.state === 'skipped' ? theme.yellow('skipped') : shownState(batch.state),
    batch.archive ? formatBytes(batch.archive.bytes) : '-',
    batch.archive ? (batch.archive.verified ? 'verified' : theme.yellow('NOT verified')) : '-',
    problemOf(batch),
  ]);
  // On a narrow terminal the batch, its migration (which archive holds it) and its state stay
  // whole; the rest is cut to fit.
  const table = renderTable(['BATCH', 'REPOS', 'MIGRATION', 'STATE', 'SIZE', 'ARCHIVE', 'PROBLEM'], rows, theme, layout, [
    { rank: KEY },
    { rank: 0 },
    { rank: KEY - 1 },
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
    state: ReturnType<typeof shownState>;
    migration_ids: number[];
    /** Kept from the journal, or planned by this run. */
    planned: 'journal' | 'new';
    /** The journal's record of it, keys in snake_case. */
    archive?: Record<string, unknown>;
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
  const table = renderTable(['BATCH', 'REPOS', 'REPOSITORIES', 'MIGRATION', 'STATE', 'PLANNED'], rows, theme, layout, [
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
