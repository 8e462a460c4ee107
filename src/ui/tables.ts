import { createRequire } from 'node:module';
import { stripVTControlCharacters } from 'node:util';
import type { ChalkInstance } from 'chalk';
import type CliTable from 'cli-table3';
import type StringWidth from 'string-width';
import type { Migration, Repository } from '../api/types.js';
import { inertText as safe } from '../support/outside-text.js';
import { dayOf, formatBytes, formatState, formatTime, monthDayOf } from './format.js';

// Loaded on first use so `--help` and `--version` never pay for them.
const require = createRequire(import.meta.url);

/** How a table is laid out: plain tab-separated lines off a terminal; fitted to its width on one. */
export interface TableLayout {
  /** stdout is not a terminal: no borders, no header, no colour, one tab-separated line per row. */
  plain: boolean;
  /** The terminal's width, when it reports one. */
  width?: number | undefined;
}

/**
 * How a column gives way when a table is wider than the terminal. Columns of the lowest rank are
 * narrowed first (to `floor`), then cells take their shorter forms (a date without its time), then
 * each rank in turn is cut, the highest (the key: an id, a name) last of all.
 */
export interface ColumnFit {
  /** 0 (the default) gives way first; the first column defaults to KEY. */
  rank?: number;
  /** A lowest-rank column is first narrowed no further than this. */
  floor?: number;
  /** Shorter forms of a cell, tried in turn before higher ranks are cut. */
  shorter?: ((cell: string) => string)[];
}

/** The rank of a table's key (its first column, unless told otherwise): cut last. */
export const KEY = 9;

const ON_A_TERMINAL: TableLayout = { plain: false };

/**
 * A table: tab-separated lines off a terminal; on one, every table as gh prints a list: a bold
 * header, no borders, two spaces between columns, one line per row, fitted to the terminal's width
 * (see ColumnFit). One style for every command, whatever its width.
 */
export function renderTable(
  head: string[],
  rows: string[][],
  theme: ChalkInstance,
  layout: TableLayout = ON_A_TERMINAL,
  columns: ColumnFit[] = [],
): string {
  if (layout.plain) {
    // What `cut -f`, `awk -F'\t'` and `while read` expect (as `gh` prints off a terminal).
    return rows.map((row) => row.map((cell) => stripVTControlCharacters(cell).replace(/[\t\r\n]+/g, ' ')).join('\t')).join('\n');
  }
  return fittedTable(head, rows, theme, layout.width || Infinity, columns);
}

/**
 * The columns a text takes on a terminal, measured as cli-table3 measures what it draws (its
 * string-width): a CJK character takes 2, a combining mark none. The fitting and the drawing must
 * agree, or cli-table3 would cut or pad a cell the fitting had sized otherwise.
 */
export function visible(text: string): number {
  stringWidth ??= require('string-width') as typeof StringWidth;
  return stringWidth(stripVTControlCharacters(text));
}
let stringWidth: typeof StringWidth | undefined;

/** The text cut to `room` columns, its last one a `…`; colour is dropped with what it coloured. */
export function cut(text: string, room: number): string {
  let kept = '';
  for (const character of stripVTControlCharacters(text)) {
    if (visible(kept + character) > room - 1) break;
    kept += character;
  }
  return `${kept}…`;
}

/** gh's list: no border anywhere; two spaces after every column (the last one's are trimmed). */
const NO_BORDERS = Object.fromEntries(
  ['top', 'top-mid', 'top-left', 'top-right', 'bottom', 'bottom-mid', 'bottom-left', 'bottom-right', 'left', 'left-mid', 'mid', 'mid-mid', 'right', 'right-mid', 'middle'].map(
    (name) => [name, ''],
  ),
);
const GAP = 2;
const DRAWN_AT_ONCE = 100;

/** A cut cell keeps at least one character and its `…`. */
const NARROWEST = 2;

/** A column cut narrower than this says nothing ("o…"): it is left out and its room given to the others. */
const USEFUL = 3;

/** The longest word of a header: a column is never narrower, so its header wraps but is never cut. */
const headFloor = (title: string) => Math.max(...title.split(' ').map(visible));

/**
 * No line wider than the terminal (see ColumnFit for what gives way first). A column that would be
 * cut below USEFUL characters, or narrower than its header's longest word, is left out, the least
 * useful first, and so is one with no value in any row. A header wraps at its spaces
 * (`PULL`/`REQUESTS`) where its column is narrower than it.
 */
function fittedTable(head: string[], rows: string[][], theme: ChalkInstance, width: number, columns: ColumnFit[]): string {
  const rankOf = (i: number) => columns[i]?.rank ?? (i === 0 ? KEY : 0);
  // A column with nothing in it (no problem in any batch) is left out.
  let shown = head.map((_, i) => i).filter((i) => i === 0 || rows.some((row) => visible(row[i] ?? '') > 0));
  let fitted = fitColumns(head, rows, width, columns, shown, rankOf);
  for (;;) {
    const top = Math.max(...shown.map(rankOf));
    const floor = (i: number) => Math.max(headFloor(head[i] ?? ''), Math.min(USEFUL, fitted.natural(i)));
    const useless = shown.filter((i) => rankOf(i) < top && (fitted.widths[i] ?? 0) < floor(i));
    if (useless.length === 0) break;
    // Of the least useful, the rightmost: the columns read first stay.
    const least = Math.min(...useless.map(rankOf));
    const dropped = useless.filter((i) => rankOf(i) === least).at(-1);
    shown = shown.filter((i) => i !== dropped);
    fitted = fitColumns(head, rows, width, columns, shown, rankOf);
  }
  const { widths, form } = fitted;
  const room = (i: number) => widths[i] ?? 0;
  const cell = (text: string, i: number) => (visible(form(i, text)) <= room(i) ? form(i, text) : cut(form(i, text), room(i)));
  const heads = shown.map((i) => wrapHead(head[i] ?? '', room(i)));
  const Table = require('cli-table3') as typeof CliTable;
  const drawn = (part: string[][], withHead: boolean) => {
    const table = new Table({
      head: withHead ? heads.map((lines) => lines.join('\n')) : [],
      chars: NO_BORDERS,
      style: { head: [], border: [], 'padding-left': 0, 'padding-right': GAP },
      colWidths: shown.map((i) => room(i) + GAP),
      wordWrap: false,
    });
    table.push(...part.map((row) => shown.map((i) => cell(row[i] ?? '', i))));
    return table.toString().split('\n');
  };
  // cli-table3 lays out its cells in a time that grows as the square of its rows (5000 repositories:
  // 1.6 s); with every width fixed, tables of DRAWN_AT_ONCE rows each draw the same lines.
  const lines = [];
  for (let start = 0; start === 0 || start < rows.length; start += DRAWN_AT_ONCE)
    lines.push(...drawn(rows.slice(start, start + DRAWN_AT_ONCE), start === 0));
  const headHeight = Math.max(...heads.map((title) => title.length));
  return lines.map((line, n) => (n < headHeight ? theme.bold(line.trimEnd()) : line.trimEnd())).join('\n');
}

/** The widths (and forms) of the columns `shown` that fit `width`, each step of ColumnFit in turn. */
function fitColumns(head: string[], rows: string[][], width: number, columns: ColumnFit[], shown: number[], rankOf: (i: number) => number) {
  const level = head.map(() => 0);
  const form = (i: number, cell: string) => {
    const shorter = level[i] ? columns[i]?.shorter?.[(level[i] ?? 1) - 1] : undefined;
    return shorter ? shorter(cell) : cell;
  };
  // Measured once per column and form: the narrowing below asks again at every step.
  const measured = new Map<string, number>();
  const values = (i: number) => {
    const key = `${i} ${level[i] ?? 0}`;
    const known = measured.get(key) ?? Math.max(0, ...rows.map((row) => visible(form(i, row[i] ?? ''))));
    measured.set(key, known);
    return known;
  };
  const natural = (i: number) => Math.max(visible(head[i] ?? ''), values(i));
  const widths = head.map((_, i) => natural(i));
  const total = () => shown.reduce((sum, i) => sum + (widths[i] ?? 0), GAP * (shown.length - 1));
  const fits = () => total() <= width;
  // The widest of a group are narrowed to a common cap, none below its floor: headers wider than
  // their values first ("migration" over ids), then the values.
  const narrow = (group: number[], floor: (i: number) => number) => {
    for (const bound of [(i: number) => Math.max(floor(i), values(i)), floor]) {
      const from = [...widths];
      let cap = Math.max(0, ...group.map((i) => widths[i] ?? 0));
      while (!fits() && cap > NARROWEST) {
        cap--;
        for (const i of group) widths[i] = Math.min(from[i] ?? 0, Math.max(cap, bound(i)));
      }
    }
  };
  const ranks = [...new Set(shown.map(rankOf))].sort((a, b) => a - b);
  const ofRank = (rank: number) => shown.filter((i) => rankOf(i) === rank);
  // Only the columns that give way first: a date is shortened (below) before it is ever cut.
  narrow(ofRank(0), (i) => Math.max(columns[i]?.floor ?? NARROWEST, headFloor(head[i] ?? '')));
  const deepest = Math.max(0, ...shown.map((i) => columns[i]?.shorter?.length ?? 0));
  for (let depth = 1; depth <= deepest && !fits(); depth++) {
    // Every column of a kind (the dates) takes the same form.
    for (const i of shown) {
      if ((columns[i]?.shorter?.length ?? 0) < depth) continue;
      level[i] = depth;
      widths[i] = Math.min(widths[i] ?? 0, natural(i));
    }
  }
  for (const rank of ranks) narrow(ofRank(rank), () => NARROWEST);
  // Room left over (a shorter form freed more than needed) goes back to cut columns, the most useful first.
  for (const i of [...shown].sort((a, b) => rankOf(b) - rankOf(a))) {
    const spare = width - total();
    if (spare <= 0) break;
    widths[i] = Math.min(natural(i), (widths[i] ?? 0) + spare);
  }
  return { widths, form, natural };
}

/**
 * A header in lines no wider than `room`, broken at its spaces; a word longer than the room is cut
 * only in a key column narrower than its header, on a terminal too narrow for anything else.
 */
function wrapHead(title: string, room: number): string[] {
  const lines: string[] = [];
  for (const word of title.split(' ')) {
    const last = lines.length - 1;
    if (last >= 0 && visible(lines[last] as string) + 1 + visible(word) <= room) lines[last] += ` ${word}`;
    else lines.push(visible(word) <= room ? word : cut(word, room));
  }
  return lines;
}

function repositoryNames(migration: Migration, excluded: boolean, theme: ChalkInstance, plain: boolean): string {
  if (excluded) return '-';
  // docs/service.md#migration: only exports carry repositories; an import (not startable through the API) has none.
  if (!('repositories' in migration)) return theme.dim('(import)');
  const names = migration.repositories?.map((repo) => safe(repo.full_name)) ?? [];
  if (plain) return names.join(',');
  if (names.length <= 3) return names.join(', ');
  return `${names.slice(0, 3).join(', ')} +${names.length - 3}`;
}

/** A date column: cut after the others, first without its time, then as `Mar 10`. */
const DATE: ColumnFit = { rank: 1, shorter: [dayOf, monthDayOf] };

/** Short times for a human; the service's own ISO 8601 for a script. */
const time = (iso: string | undefined, layout: TableLayout) => (layout.plain ? safe(iso ?? '') : formatTime(iso));

/**
 * docs/cli.md `list`: ID, STATE, REPOSITORIES, LOCK REQUESTED, CREATED, UPDATED. `lock_repositories`
 * is what the export asked for, not whether the repositories are locked now (`unlock` leaves it).
 */
export function migrationsTable(
  migrations: Migration[],
  theme: ChalkInstance,
  repositoriesExcluded = false,
  layout: TableLayout = ON_A_TERMINAL,
): string {
  if (migrations.length === 0) return layout.plain ? '' : 'no migrations';
  return renderTable(
    ['ID', 'STATE', 'REPOSITORIES', 'LOCK REQUESTED', 'CREATED', 'UPDATED'],
    migrations.map((m) => [
      safe(String(m.id)),
      formatState(m.state, theme),
      repositoryNames(m, repositoriesExcluded, theme, layout.plain),
      m.lock_repositories ? 'yes' : 'no',
      time(m.created_at, layout),
      time(m.updated_at, layout),
    ]),
    theme,
    layout,
    // gh-like at any width: the id and the state stay whole; dates lose their time, then their year.
    [{ rank: KEY }, { rank: KEY - 1 }, { floor: 16 }, { floor: 3 }, DATE, DATE],
  );
}

export function migrationSummary(migration: Migration, theme: ChalkInstance): string {
  const lines = [
    `migration ${safe(String(migration.id))}  ${formatState(migration.state, theme)}`,
    `  guid            ${safe(migration.guid)}`,
    `  organization    ${safe(migration.owner.login)}`,
    // What the export asked for (`lock_repositories`); `unlock` does not change it.
    `  lock requested  ${migration.lock_repositories ? 'yes' : 'no'}`,
    `  created         ${formatTime(migration.created_at)}`,
    `  updated         ${formatTime(migration.updated_at)}`,
  ];
  if (migration.repositories)
    lines.push(`  repositories    ${migration.repositories.map((r) => safe(r.full_name)).join(', ')}`);
  return lines.join('\n');
}

export function repositoriesTable(repositories: Repository[], theme: ChalkInstance, layout: TableLayout = ON_A_TERMINAL): string {
  if (repositories.length === 0) return layout.plain ? '' : 'no repositories';
  return renderTable(
    ['NAME', 'VISIBILITY', 'DEFAULT BRANCH', 'SIZE (KB)', 'ARCHIVED', 'PUSHED'],
    repositories.map((r) => [
      safe(r.full_name),
      safe(r.visibility),
      safe(r.default_branch),
      safe(String(r.size)),
      r.archived ? 'yes' : 'no',
      time(r.pushed_at, layout),
    ]),
    theme,
    layout,
    [{ rank: KEY }, {}, {}, {}, {}, DATE],
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
      o.ok ? `${theme.green('✓')} unlocked ${safe(o.repository)}` : `${theme.red('✗')} ${safe(o.repository)}: ${safe(o.error ?? '')}`,
    )
    .join('\n');
}
