import type { ChalkInstance } from 'chalk';
import type { RepositoryRestore, RestoreReport } from '../core/restore/run.js';
import { inertText } from '../support/outside-text.js';
import { verifyMessage } from './archive.js';
import { KEY, renderTable, type TableLayout } from './tables.js';

// What `archive restore` says: a line per repository as it ends (stderr), then a table and what
// went wrong, each failure in the remote's own words (shown inert: they come from the remote).

/** Refs, differences and remote lines shown for one repository; --json has them all. */
const SHOWN = 5;

const refs = (count: number) => `${count} ref${count === 1 ? '' : 's'}`;

/** Up to SHOWN refs named, and how many more. */
const named = (list: string[]) => (list.length > 0 ? ` (${list.slice(0, SHOWN).map(inertText).join(', ')}${list.length > SHOWN ? `, … ${list.length - SHOWN} more` : ''})` : '');

const TARGET_IS: Record<NonNullable<RepositoryRestore['target']>, string> = {
  missing: 'not there yet (it would be made)',
  empty: 'empty',
  equal: 'equal to the archive already',
  differs: 'different',
  unreachable: 'unreachable',
};

/** What is said after a repository's line, whatever its state: pull refs left out, LFS files, another default branch. */
function asides(result: RepositoryRestore, theme: ChalkInstance): string {
  const notes: string[] = [];
  if (result.pull_refs_left_out) notes.push(`${result.pull_refs_left_out} pull-request ref${result.pull_refs_left_out === 1 ? '' : 's'} left out`);
  if (result.lfs_pointers) notes.push(theme.yellow(`${result.lfs_pointers} Git LFS file${result.lfs_pointers === 1 ? '' : 's'} whose content the archive does not hold`));
  if (result.head) notes.push(theme.yellow(`the remote's default branch is ${inertText(result.head.remote)}, the archive's ${inertText(result.head.archive)}: set it on the host`));
  return notes.map((note) => `; ${note}`).join('');
}

/** One repository's end, for logs: `acme/widgets → URL: proved (3 refs, 3 pushed)`. */
function restoreLine(result: RepositoryRestore, theme: ChalkInstance): string {
  const where = `${inertText(result.name)} → ${inertText(result.url || '(no URL)')}`;
  switch (result.state) {
    case 'proved':
      return `${theme.green('✓')} ${where}: proved (${refs(result.refs)}${result.pushed ? `, ${result.pushed} pushed` : ''}${result.created ? ', repository made' : ''})${asides(result, theme)}`;
    case 'already proved':
      return `${theme.green('✓')} ${where}: already proved (${refs(result.refs)}, checked again)${asides(result, theme)}`;
    case 'planned': {
      const toPush = result.to_push ?? [];
      const toDelete = result.to_delete ?? [];
      const deletes = toDelete.length > 0 ? ` and delete ${refs(toDelete.length)}${named(toDelete)}` : '';
      const target = result.target ? TARGET_IS[result.target] : 'unknown';
      return `${where}: would push ${refs(toPush.length)}${named(toPush)}${deletes}; the target is ${target}${result.error ? ` (${inertText(result.error)})` : ''}${asides(result, theme)}`;
    }
    default:
      return `${theme.red('✗')} ${where}: ${inertText(result.error ?? 'failed')}${asides(result, theme)}`;
  }
}

/** One repository's end and, when it failed or a dry run found the target different, what differs, a line each. */
export function restoreLines(result: RepositoryRestore, theme: ChalkInstance): string {
  const details = result.state === 'failed' || result.target === 'differs' ? failureDetails(result) : [];
  return [restoreLine(result, theme), ...details].join('\n');
}

/** What went wrong with one repository, a line each: refused refs, differing refs, the remote's words. */
function failureDetails(result: RepositoryRestore): string[] {
  const lines: string[] = [];
  for (const { ref, reason } of (result.refused ?? []).slice(0, SHOWN)) lines.push(`    refused ${inertText(ref)}: ${inertText(reason)}`);
  for (const difference of (result.differences ?? []).slice(0, SHOWN)) {
    const archive = difference.archive ? difference.archive.slice(0, 12) : 'nothing';
    const remote = difference.remote ? difference.remote.slice(0, 12) : 'nothing';
    const symbolic = difference.symbolic_to ? ` (a symbolic ref to ${inertText(difference.symbolic_to)}: never deleted, as that would delete what it names)` : '';
    lines.push(`    ${inertText(difference.ref)}: the archive has ${archive}, the remote ${remote}${symbolic}`);
  }
  const more = (result.differences_total ?? result.differences?.length ?? 0) - Math.min(SHOWN, result.differences?.length ?? 0);
  if (more > 0) lines.push(`    … and ${more} more (--json lists them)`);
  for (const line of (result.messages ?? []).slice(0, SHOWN)) lines.push(`    remote: ${inertText(line)}`);
  return lines;
}

export function restoreMessage(report: RestoreReport, theme: ChalkInstance, layout: TableLayout): string {
  const head = report.dry_run ? ['REPOSITORY', 'TARGET', 'TO PUSH', 'URL'] : ['REPOSITORY', 'STATE', 'REFS', 'URL'];
  const rows = report.repositories.map((result) =>
    report.dry_run
      ? [inertText(result.name), result.target ?? '', String(result.to_push?.length ?? 0), inertText(result.url)]
      : [inertText(result.name), result.state === 'failed' ? theme.red(result.state) : result.state, String(result.refs), inertText(result.url)],
  );
  const table = renderTable(head, rows, theme, layout, [{ rank: KEY }, { rank: 8 }, { rank: 7 }, { rank: 0, floor: 20 }]);
  if (layout.plain) return table;
  const lines = [verifyMessage(report.verify, theme).split('\n')[0] ?? '', table];
  const failed = report.repositories.filter((result) => result.state === 'failed');
  for (const result of failed) lines.push(restoreLines(result, theme));
  const lfs = report.repositories.filter((result) => result.lfs_pointers);
  if (lfs.length > 0) {
    lines.push(theme.yellow(`${lfs.length} repositor${lfs.length === 1 ? 'y has' : 'ies have'} Git LFS files whose content the archive does not hold (their pointers were pushed): fetch them from the service with \`git lfs fetch --all\` before its copy is deleted`));
  }
  lines.push(restoreSummary(report, theme));
  return lines.join('\n');
}

/** The last line: how many were proved, and what to do about the rest. */
function restoreSummary(report: RestoreReport, theme: ChalkInstance): string {
  const total = report.repositories.length;
  if (total === 0) return 'no repository of the archive holds git data (it was exported without it): nothing to push';
  if (report.dry_run) return `dry run: nothing was pushed; ${total} repositor${total === 1 ? 'y' : 'ies'} planned`;
  if (report.failed === 0) return `${theme.green('✓')} ${report.proved} of ${total} repositories proved equal on the remote (git ls-remote)`;
  return `${theme.red('✗')} ${report.failed} of ${total} repositories not proved; ${report.proved} proved. Fix what is said above, then run the same command again: proved repositories are checked, not pushed again`;
}
