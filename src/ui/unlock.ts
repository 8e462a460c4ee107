import type { ChalkInstance } from 'chalk';
import type { MigrationReport } from '../core/unlock.js';
import { counted } from '../support/counted.js';
import { unlockMessage } from './tables.js';

// What `unlock <ids...> --all` and `unlock --output-dir` did, migration by migration, and a closing count.

const STATE_WORDS: Record<MigrationReport['state'], string> = {
  unlocked: '',
  not_locked: 'nothing to unlock: it did not lock its repositories',
  not_found: 'not found',
  failed: 'not unlocked',
  unlocked_by_export: 'unlocked by the export already',
  unlocked_before: 'unlocked by an earlier `unlock --output-dir` already',
  start_not_found:
    'its start was sent but its answer never came, and no migration of its repositories started since is in the list: '
    + 'the start may not have reached the service, and then nothing of it is locked',
};

export function unlockMigrationsMessage(reports: MigrationReport[], org: string, theme: ChalkInstance): string {
  const lines = reports.map((report) => {
    const batch = report.batch === undefined ? '' : `batch ${report.batch}`;
    const head = report.migration_id === undefined
      ? batch
      : `migration ${report.migration_id}${batch ? ` (${batch}${report.lost_start ? ', found in the list: its start\'s answer was lost' : ''})` : ''}`;
    if (report.state === 'unlocked') {
      const body = unlockMessage(report.repositories, theme).split('\n').map((line) => `  ${line}`);
      return [`${head}:`, ...body].join('\n');
    }
    const words = report.migration_id === undefined && report.state === 'failed' ? 'its start could not be looked up' : STATE_WORDS[report.state];
    // The service's 404 only says again that the migration was not found: said once, with the organization.
    if (report.state === 'not_found') return `${head}: ${words} in organization ${org}`;
    return `${head}: ${words}${report.error ? ` (${report.error})` : ''}`;
  });
  return [...lines, summary(reports)].join('\n');
}

/**
 * The closing line: repositories unlocked, of the migrations asked to unlock them; a migration that
 * locked nothing, or was unlocked already, unlocked nothing and is said as such, not counted.
 */
function summary(reports: MigrationReport[]): string {
  const unlocked = reports.reduce((n, report) => n + report.repositories.filter((o) => o.ok).length, 0);
  // Only migrations there are: one not found, or a start not found, is no migration of the count.
  const tried = reports.filter((report) => report.migration_id !== undefined && (report.state === 'unlocked' || report.state === 'failed'));
  const lockedNothing = reports.filter((report) => report.state === 'not_locked').length;
  const already = reports.filter((report) => report.state === 'unlocked_by_export' || report.state === 'unlocked_before').length;
  const notFound = reports.filter((report) => report.state === 'not_found').map((report) => report.migration_id);
  return [
    tried.length > 0 ? `unlocked ${counted(unlocked, 'repository', 'repositories')} of ${counted(tried.length, 'migration')}` : 'nothing unlocked',
    ...(lockedNothing > 0 ? [`${counted(lockedNothing, 'migration')} locked nothing`] : []),
    ...(already > 0 ? [`${counted(already, 'migration')} unlocked already`] : []),
    ...(notFound.length > 0 ? [`not found: ${notFound.join(', ')}`] : []),
  ].join('; ');
}
