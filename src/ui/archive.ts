import type { ChalkInstance } from 'chalk';
import type { ExtractReport } from '../core/archive/extract.js';
import type { InspectReport } from '../core/archive/inspect.js';
import type { VerifyReport } from '../core/archive/verify.js';
import type { ViewReport } from '../core/view/site.js';
import { describeProblem } from '../core/archive/problem.js';
import { inertText } from '../support/outside-text.js';
import { formatBytes } from './format.js';
import { KEY, renderTable, type TableLayout } from './tables.js';

/** Empty repositories named on their line; --json lists every one. */
const MAX_NAMED = 20;

export function verifyMessage(report: VerifyReport, theme: ChalkInstance): string {
  const lines: string[] = [];
  const repos = report.repositories.length;
  const summary = `${repos} repositor${repos === 1 ? 'y' : 'ies'}, ${report.metadata_files} metadata files, ${report.entries} members, ${formatBytes(report.bytes)}`;
  const git =
    report.git_check === 'passed'
      ? 'git objects checked with git fsck'
      : report.git_check === 'failed'
        ? 'git objects: check FAILED'
        : `git objects NOT checked (${report.git_check.replace(/^skipped: /, '')})`;
  if (report.ok) lines.push(`${theme.green('✓')} ${inertText(report.path)} is intact: ${summary}; ${git}`);
  else {
    const count = report.problems.length;
    lines.push(`${theme.red('✗')} ${inertText(report.path)} failed verification: ${count} problem${count === 1 ? '' : 's'}`);
    for (const problem of report.problems) lines.push(`  - ${describeProblem(problem)}`);
  }
  const empty = report.repositories.filter((repo) => repo.empty).map((repo) => inertText(repo.name));
  if (empty.length > 0) {
    const shown = empty.length > MAX_NAMED ? `${empty.slice(0, MAX_NAMED).join(', ')} and ${empty.length - MAX_NAMED} more` : empty.join(', ');
    lines.push(`  ${empty.length} empty repositor${empty.length === 1 ? 'y' : 'ies'} (no branch or tag): ${shown}`);
  }
  if (report.sha256 && report.sha256.expected === report.sha256.actual) lines.push(`  sha256 ${report.sha256.actual} matches ${inertText(report.path)}.sha256`);
  if (report.migration_id !== undefined && report.ok) lines.push(`  every repository of migration ${report.migration_id} is in it`);
  for (const note of report.notes) lines.push(`  ${theme.yellow('note:')} ${inertText(note)}`);
  return lines.join('\n');
}

/**
 * The summary, a table of repositories, the metadata. Off a terminal only the table's tab-separated
 * rows (as every table): the lines around it are `inspectNotes`, which the caller prints on stderr.
 */
export function inspectMessage(report: InspectReport, theme: ChalkInstance, layout: TableLayout = { plain: false }): string {
  const table = inspectTable(report, theme, layout);
  if (layout.plain) return table;
  const { before, after } = inspectNotes(report, theme);
  return [before, table || 'no repositories', ...after].join('\n');
}

/** The columns of `archive inspect`'s table: those after GIT DATA are the kinds of records the archive holds. */
function inspectColumns(report: InspectReport): { head: string[]; kinds: string[] } {
  const kinds = [...new Set(report.repositories.flatMap((repo) => Object.keys(repo.counts)))].sort();
  // A kind is a metadata file's name, from the archive: a soft hyphen or a tag character in it is shown.
  return { head: ['REPOSITORY', 'REFS', 'GIT DATA', ...kinds.map((kind) => inertText(kind.toUpperCase().replaceAll('_', ' ')))], kinds };
}

function inspectTable(report: InspectReport, theme: ChalkInstance, layout: TableLayout): string {
  if (report.repositories.length === 0) return '';
  const { head, kinds } = inspectColumns(report);
  return renderTable(
    head,
    report.repositories.map((repo) => [
      inertText(repo.name),
      refsSummary(repo.refs, layout.plain),
      formatBytes(repo.git_bytes),
      ...kinds.map((kind) => String(repo.counts[kind] ?? 0)),
    ]),
    theme,
    layout,
    // On a narrow terminal the name, its git data and its refs stay longest; the counts give way first.
    [{ rank: KEY }, { rank: 1 }, { rank: 2 }],
  );
}

/**
 * What is said around the table: the file and its organization before it, the metadata files and
 * any problem after it. Off a terminal (stderr then) the columns are named too: which kinds of
 * record follow GIT DATA depends on the archive.
 */
export function inspectNotes(report: InspectReport, theme: ChalkInstance, plain = false): { before: string; after: string[] } {
  const before = `${inertText(report.path)}: ${formatBytes(report.bytes)}, organization ${inertText(report.organizations.join(', ') || '(none)')}`;
  const after: string[] = [];
  if (plain) after.push(report.repositories.length > 0 ? `columns: ${inspectColumns(report).head.join(', ')}` : 'no repositories');
  const files = report.metadata.map((file) => `${inertText(file.file)}${file.records === undefined ? '' : ` (${file.records})`}`);
  if (files.length > 0) after.push(`metadata: ${files.join(', ')}`);
  if (!report.complete || report.problems.length > 0) {
    after.push(theme.yellow('the archive has problems; run `svc-migrate archive verify` for the full check:'));
    for (const problem of report.problems) after.push(`  - ${describeProblem(problem)}`);
  }
  return { before, after };
}

/** Off a terminal, every ref comma-separated (as `list` gives every repository); on one, three and `+N`. */
function refsSummary(refs: Record<string, string>, plain: boolean): string {
  const names = Object.keys(refs).map((ref) => inertText(ref.replace(/^refs\/(heads|tags)\//, (_m, kind: string) => (kind === 'tags' ? 'tag:' : ''))));
  if (names.length === 0) return '-';
  if (plain) return names.join(',');
  return names.length <= 3 ? names.join(', ') : `${names.slice(0, 3).join(', ')} +${names.length - 3}`;
}

export function extractMessage(report: ExtractReport, theme: ChalkInstance): string {
  const repos = report.repositories.length;
  const empty = report.repositories.filter((repo) => repo.empty).length;
  return [
    verifyMessage(report.verify, theme),
    `${theme.green('✓')} extracted ${repos} repositor${repos === 1 ? 'y' : 'ies'}${empty ? ` (${empty} empty)` : ''} and ${report.files.length} other file${report.files.length === 1 ? '' : 's'} to ${inertText(report.directory)}`,
    ...(repos > 0 ? [`  each one a bare repository: git clone ${inertText(report.directory)}/${inertText(report.repositories[0]?.path ?? '')} …`] : []),
    ...(report.left_out.count > 0 ? [leftOutLine(report.left_out, theme)] : []),
  ].join('\n');
}

/** Files the service's archives never hold, which extract did not write: how many, and the first. */
function leftOutLine({ count, first }: ExtractReport['left_out'], theme: ChalkInstance): string {
  const more = count > first.length ? `, and ${count - first.length} more` : '';
  return `${theme.yellow('!')} left out ${count} file${count === 1 ? '' : 's'} the service's archives never hold (only the metadata, attachments/ and releases/ are written): ${first.map(inertText).join(', ')}${more}`;
}

/** What `archive view` made: where the site is and how much of it, and, read with --no-verify, that it was not verified. */
export function viewMessage(report: ViewReport, theme: ChalkInstance): string {
  const items = report.repositories.reduce((sum, repo) => sum + repo.issues + repo.pull_requests, 0);
  const repos = report.repositories.length;
  return [
    ...(report.verified ? [] : [theme.yellow('! the archive was NOT verified (--no-verify): every page says so')]),
    `${theme.green('✓')} wrote ${report.pages} page${report.pages === 1 ? '' : 's'} (${repos} repositor${repos === 1 ? 'y' : 'ies'}, ${items} issues and pull requests) and ${report.files} file${report.files === 1 ? '' : 's'} to ${inertText(report.directory)}`,
    `  open ${inertText(report.directory)}/index.html in a browser`,
  ].join('\n');
}
