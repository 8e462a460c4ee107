import type { ChalkInstance } from 'chalk';
import type { InspectReport } from '../core/archive/inspect.js';
import type { VerifyReport } from '../core/archive/verify.js';
import { describeProblem, escapeControl } from '../archive-problem.js';
import { formatBytes } from './format.js';
import { renderTable, type TableLayout } from './tables.js';

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
  if (report.ok) lines.push(`${theme.green('✓')} ${escapeControl(report.path)} is intact: ${summary}; ${git}`);
  else {
    const count = report.problems.length;
    lines.push(`${theme.red('✗')} ${escapeControl(report.path)} failed verification: ${count} problem${count === 1 ? '' : 's'}`);
    for (const problem of report.problems) lines.push(`  - ${describeProblem(problem)}`);
  }
  if (report.sha256 && report.sha256.expected === report.sha256.actual) lines.push(`  sha256 ${report.sha256.actual} matches ${escapeControl(report.path)}.sha256`);
  if (report.migration_id !== undefined && report.ok) lines.push(`  every repository of migration ${report.migration_id} is in it`);
  for (const note of report.notes) lines.push(`  ${theme.yellow('note:')} ${escapeControl(note)}`);
  return lines.join('\n');
}

/** The summary, a table of repositories (tab-separated lines off a terminal, as every table), the metadata. */
export function inspectMessage(report: InspectReport, theme: ChalkInstance, layout: TableLayout = { plain: false }): string {
  const kinds = [...new Set(report.repositories.flatMap((repo) => Object.keys(repo.counts)))].sort();
  const lines = [
    `${escapeControl(report.path)}: ${formatBytes(report.bytes)}, organization ${escapeControl(report.organizations.join(', ') || '(none)')}`,
  ];
  if (report.repositories.length > 0) {
    lines.push(
      renderTable(
        ['REPOSITORY', 'REFS', 'GIT DATA', ...kinds.map((kind) => kind.toUpperCase().replaceAll('_', ' '))],
        report.repositories.map((repo) => [
          escapeControl(repo.name),
          refsSummary(repo.refs, layout.plain),
          formatBytes(repo.git_bytes),
          ...kinds.map((kind) => String(repo.counts[kind] ?? 0)),
        ]),
        theme,
        layout,
      ),
    );
  } else lines.push('no repositories');
  const files = report.metadata.map((file) => `${escapeControl(file.file)}${file.records === undefined ? '' : ` (${file.records})`}`);
  if (files.length > 0) lines.push(`metadata: ${files.join(', ')}`);
  if (!report.complete || report.problems.length > 0) {
    lines.push(theme.yellow('the archive has problems; run `svc-migrate archive verify` for the full check:'));
    for (const problem of report.problems) lines.push(`  - ${describeProblem(problem)}`);
  }
  return lines.join('\n');
}

/** Off a terminal, every ref comma-separated (as `list` gives every repository); on one, three and `+N`. */
function refsSummary(refs: Record<string, string>, plain: boolean): string {
  const names = Object.keys(refs).map((ref) => escapeControl(ref.replace(/^refs\/(heads|tags)\//, (_m, kind: string) => (kind === 'tags' ? 'tag:' : ''))));
  if (names.length === 0) return '-';
  if (plain) return names.join(',');
  return names.length <= 3 ? names.join(', ') : `${names.slice(0, 3).join(', ')} +${names.length - 3}`;
}
