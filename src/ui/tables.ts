import { createRequire } from 'node:module';
import { stripVTControlCharacters } from 'node:util';
import type { ChalkInstance } from 'chalk';
import type CliTable from 'cli-table3';
import type { Migration, Repository } from '../api/types.js';
import { formatBytes, formatState, formatTime } from './format.js';

// Loaded on first use so `--help` and `--version` never pay for it.
const require = createRequire(import.meta.url);

/** How a table is laid out: plain tab-separated lines off a terminal; fitted to its width on one. */
export interface TableLayout {
  /** stdout is not a terminal: no borders, no header, no colour, one tab-separated line per row. */
  plain: boolean;
  /** The terminal's width, when it reports one. */
  width?: number | undefined;
}

/**
 * How a table too wide for the terminal is fitted: its long cells wrap between words, or (lists of
 * many rows, as gh does) each row stays one line and cells are cut with `…`.
 */
type Fit = 'wrap' | 'truncate';

const BOXED: TableLayout = { plain: false };

export function renderTable(head: string[], rows: string[][], theme: ChalkInstance, layout: TableLayout = BOXED, fit: Fit = 'wrap'): string {
  if (layout.plain) {
    // What `cut -f`, `awk -F'\t'` and `while read` expect (as `gh` prints off a terminal).
    return rows.map((row) => row.map((cell) => stripVTControlCharacters(cell).replace(/[\t\r\n]+/g, ' ')).join('\t')).join('\n');
  }
  const Table = require('cli-table3') as typeof CliTable;
  if (fit === 'truncate' && layout.width && !boxFits([head, ...rows], layout.width)) {
    return narrowTable(head, rows, theme, layout.width);
  }
  const widths = layout.width ? fitColumns([head, ...rows], layout.width) : undefined;
  const table = new Table({
    head: head.map((title, column) => theme.bold(widths ? wrapText(title, (widths[column] ?? 0) - 2) : title)),
    style: { head: [], border: [] },
    chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
    ...(widths ? { colWidths: widths } : {}),
  });
  table.push(...(widths ? rows.map((row) => row.map((cell, column) => wrapText(cell, (widths[column] ?? 0) - 2))) : rows));
  return table.toString();
}

/** Wraps a cell between words; a word longer than the line is broken. Short cells keep their colour. */
function wrapText(text: string, width: number): string {
  const plain = stripVTControlCharacters(text);
  if (width < 1 || plain.length <= width) return text;
  const lines: string[] = [];
  let line = '';
  for (const word of plain.split(/\s+/).filter(Boolean)) {
    let rest = word;
    if (line && line.length + 1 + rest.length <= width) {
      line += ` ${rest}`;
      continue;
    }
    if (line) lines.push(line);
    while (rest.length > width) {
      lines.push(rest.slice(0, width));
      rest = rest.slice(width);
    }
    line = rest;
  }
  if (line) lines.push(line);
  return lines.join('\n');
}

/**
 * Column widths (padding included) that fit `width`: the widest columns are narrowed to a common
 * cap and wrap between words. Words stay whole where they can (the first column, the table's key,
 * always does); undefined when the table fits as it is.
 */
function fitColumns(rows: string[][], width: number): number[] | undefined {
  const count = Math.max(...rows.map((row) => row.length));
  const cells = (column: number) => rows.map((row) => stripVTControlCharacters(row[column] ?? ''));
  const natural = Array.from({ length: count }, (_, column) => Math.max(...cells(column).map((cell) => cell.length)) + 2);
  const longestWord = Array.from(
    { length: count },
    (_, column) => Math.max(...cells(column).flatMap((cell) => cell.split(/\s+/).map((word) => word.length))) + 2,
  );
  const borders = count + 1;
  const fit = (floor: (column: number) => number) => {
    const widths = (cap: number) => natural.map((n, i) => Math.max(Math.min(n, cap), Math.min(n, floor(i))));
    const total = (cap: number) => widths(cap).reduce((sum, n) => sum + n, 0) + borders;
    let cap = Math.max(...natural);
    while (cap > MIN_COLUMN && total(cap) > width) cap--;
    return { widths: widths(cap), fits: total(cap) <= width };
  };
  if (natural.reduce((sum, n) => sum + n, 0) + borders <= width) return undefined;
  const whole = fit((i) => longestWord[i] ?? 0);
  if (whole.fits) return whole.widths;
  return fit((i) => (i === 0 ? (longestWord[0] ?? 0) : 0)).widths;
}

const MIN_COLUMN = 8;

const cellWidths = (rows: string[][]) =>
  Array.from({ length: Math.max(...rows.map((row) => row.length)) }, (_, column) =>
    Math.max(...rows.map((row) => stripVTControlCharacters(row[column] ?? '').length)),
  );

/** Whether the boxed table fits: each cell padded by a space on either side, a border between. */
function boxFits(rows: string[][], width: number): boolean {
  const widths = cellWidths(rows);
  return widths.reduce((total, n) => total + n + 3, 1) <= width;
}

/**
 * A list too wide for the terminal, as gh prints one: no borders, two spaces between columns,
 * every row on one line, cells cut with `…`. The widest columns are narrowed to a common cap first,
 * the first column (the key: an id, a name) last of all.
 */
function narrowTable(head: string[], rows: string[][], theme: ChalkInstance, width: number): string {
  const natural = cellWidths([head, ...rows]);
  const gaps = 2 * (natural.length - 1);
  const sum = (widths: number[]) => widths.reduce((total, n) => total + n, 0) + gaps;
  // A cut cell keeps at least one character and its `…`.
  const NARROWEST = 2;
  const capped = (cap: number, key: number) => natural.map((n, i) => Math.min(n, i === 0 ? key : cap));
  let cap = Math.max(...natural.slice(1), NARROWEST);
  while (cap > NARROWEST && sum(capped(cap, natural[0] ?? 0)) > width) cap--;
  let key = natural[0] ?? 0;
  while (key > NARROWEST && sum(capped(cap, key)) > width) key--;
  const widths = capped(cap, key);
  const cell = (text: string, column: number) => {
    const room = widths[column] ?? 0;
    const plain = stripVTControlCharacters(text);
    if (plain.length <= room) return text + ' '.repeat(room - plain.length);
    return `${plain.slice(0, room - 1)}…`;
  };
  const line = (row: string[]) => row.map(cell).join('  ').trimEnd();
  return [theme.bold(line(head)), ...rows.map(line)].join('\n');
}

function repositoryNames(migration: Migration, excluded: boolean, theme: ChalkInstance, plain: boolean): string {
  if (excluded) return '-';
  // docs/service.md#migration: only exports carry repositories; an import (not startable through the API) has none.
  if (!('repositories' in migration)) return theme.dim('(import)');
  const names = migration.repositories?.map((repo) => repo.full_name) ?? [];
  if (plain) return names.join(',');
  if (names.length <= 3) return names.join(', ');
  return `${names.slice(0, 3).join(', ')} +${names.length - 3}`;
}

/** Short times for a human; the service's own ISO 8601 for a script. */
const time = (iso: string | undefined, layout: TableLayout) => (layout.plain ? (iso ?? '') : formatTime(iso));

/**
 * docs/cli.md `list`: ID, STATE, REPOSITORIES, LOCK REQUESTED, CREATED, UPDATED. `lock_repositories`
 * is what the export asked for, not whether the repositories are locked now (`unlock` leaves it).
 */
export function migrationsTable(
  migrations: Migration[],
  theme: ChalkInstance,
  repositoriesExcluded = false,
  layout: TableLayout = BOXED,
): string {
  if (migrations.length === 0) return layout.plain ? '' : 'no migrations';
  return renderTable(
    ['ID', 'STATE', 'REPOSITORIES', 'LOCK REQUESTED', 'CREATED', 'UPDATED'],
    migrations.map((m) => [
      String(m.id),
      formatState(m.state, theme),
      repositoryNames(m, repositoriesExcluded, theme, layout.plain),
      m.lock_repositories ? 'yes' : 'no',
      time(m.created_at, layout),
      time(m.updated_at, layout),
    ]),
    theme,
    layout,
    'truncate',
  );
}

export function migrationSummary(migration: Migration, theme: ChalkInstance): string {
  const lines = [
    `migration ${migration.id}  ${formatState(migration.state, theme)}`,
    `  guid            ${migration.guid}`,
    `  organization    ${migration.owner.login}`,
    // What the export asked for (`lock_repositories`); `unlock` does not change it.
    `  lock requested  ${migration.lock_repositories ? 'yes' : 'no'}`,
    `  created         ${formatTime(migration.created_at)}`,
    `  updated         ${formatTime(migration.updated_at)}`,
  ];
  if (migration.repositories)
    lines.push(`  repositories    ${migration.repositories.map((r) => r.full_name).join(', ')}`);
  return lines.join('\n');
}

export function repositoriesTable(repositories: Repository[], theme: ChalkInstance, layout: TableLayout = BOXED): string {
  if (repositories.length === 0) return layout.plain ? '' : 'no repositories';
  return renderTable(
    ['NAME', 'VISIBILITY', 'DEFAULT BRANCH', 'SIZE (KB)', 'ARCHIVED', 'PUSHED'],
    repositories.map((r) => [
      r.full_name,
      r.visibility,
      r.default_branch,
      String(r.size),
      r.archived ? 'yes' : 'no',
      time(r.pushed_at, layout),
    ]),
    theme,
    layout,
    'truncate',
  );
}

/** After `start`: the id and the state (what to run next is a hint on stderr). */
export function startedMessage(migration: Migration, theme: ChalkInstance): string {
  return `started migration ${theme.bold(String(migration.id))} (${formatState(migration.state, theme)})`;
}

export interface DownloadSummary {
  migration_id: number;
  path: string;
  bytes: number;
  sha256?: string;
  /** Passed `archive verify` before taking its final name. */
  verified?: boolean;
  /** `<archive>.sha256` written beside it. */
  sha256_file?: string;
}

export function downloadMessage(summary: DownloadSummary): string {
  const size = `${formatBytes(summary.bytes)}, ${summary.bytes} bytes`;
  // `-o -`: the archive went to stdout; there is no file called "-".
  const lines = [summary.path === '-' ? `written to stdout (${size})` : `saved ${summary.path} (${size})`];
  if (summary.sha256) lines.push(`sha256 ${summary.sha256}${summary.sha256_file ? ` (in ${summary.sha256_file})` : ''}`);
  if (summary.verified) lines.push('verified with `archive verify` before it took its name');
  return lines.join('\n');
}

export function unlockMessage(
  outcomes: { repository: string; ok: boolean; error?: string }[],
  theme: ChalkInstance,
): string {
  if (outcomes.length === 0) return 'nothing to unlock';
  return outcomes
    .map((o) =>
      o.ok ? `${theme.green('✓')} unlocked ${o.repository}` : `${theme.red('✗')} ${o.repository}: ${o.error}`,
    )
    .join('\n');
}
