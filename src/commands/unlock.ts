import type { Command } from 'commander';
import type { Context, Runner } from '../context.js';
import { journalMigrations, lookUpStarts, recordUnlocked, unlockedRecord } from '../core/journal-locks.js';
import { lockDirectory } from '../core/org-export/lock.js';
import {
  checkUnlockRequest,
  givenBack,
  type MigrationUnlock,
  migrationsUnlockFailure,
  resolveUnlockTargets,
  unlockFailure,
  unlockMigrations,
  type UnlockOutcome,
  unlockRepositories,
  type UnlockRequest,
} from '../core/unlock.js';
import { UsageError } from '../errors.js';
import { counted } from '../support/counted.js';
import { shellWord } from '../support/shell-word.js';
import { unlockMessage } from '../ui/tables.js';
import { commandLine } from './common/command-line.js';
import { checkNotEmpty, examples, parseMigrationId } from './common/options.js';

interface UnlockFlags {
  all?: boolean;
  repo?: string;
  outputDir?: string;
}

type UnlockCommand =
  | { kind: 'one'; request: UnlockRequest }
  /** Several migrations whole: ids given with --all, or every one the journal of --output-dir names. */
  | { kind: 'many'; ids: number[] }
  | { kind: 'output-dir'; dir: string };

/**
 * One migration's line in the report of several: what was done, then each repository. A batch the
 * export left `starting` whose migration the list does not show has no migration id
 * (`start_not_found`, or `failed` when the list could not be had).
 */
interface MigrationReport {
  migration_id?: number;
  batch?: number;
  state: 'unlocked' | 'not_locked' | 'not_found' | 'failed' | 'unlocked_by_export' | 'unlocked_before' | 'start_not_found';
  /** Found in the list for a batch left `starting`: its start's answer was lost. */
  lost_start?: true;
  repositories: { repository: string; ok: boolean; error?: string }[];
  error?: string;
}

function parseUnlock(id: number | undefined, names: string[], flags: UnlockFlags): UnlockCommand {
  checkNotEmpty(flags.outputDir, '--output-dir', 'name the directory an `export --output-dir` wrote into');
  if (flags.outputDir !== undefined) {
    if (id !== undefined || names.length > 0 || flags.repo !== undefined) {
      throw new UsageError('--output-dir unlocks what the export in that directory locked: give no migration id, repository or --repo with it');
    }
    return { kind: 'output-dir', dir: flags.outputDir };
  }
  // `unlock 1 2 3 --all`: with --all no repository may be named, so numbers after the id are ids.
  if (id !== undefined && flags.all && names.length > 0 && names.every((name) => /^\d+$/.test(name))) {
    const bad = names.find((name) => !Number.isSafeInteger(Number(name)) || Number(name) < 1);
    if (bad !== undefined) throw new UsageError(`a migration id is a positive integer, not "${bad}"`);
    return { kind: 'many', ids: [...new Set([id, ...names.map(Number)])] };
  }
  const request: UnlockRequest = { id, names, all: flags.all, repo: flags.repo };
  checkUnlockRequest(request);
  return { kind: 'one', request };
}

/** docs/service.md#unlock-repository for one, many or all repositories; carries on past failures and reports each. */
async function unlockOne(context: Context, request: UnlockRequest): Promise<UnlockOutcome[]> {
  const client = await context.api();
  const org = context.org();
  const targets = await resolveUnlockTargets(client, org, request);
  if (targets.foundFor) context.out.info(`${targets.foundFor} was locked by migration ${targets.id}`);
  const outcomes = await unlockRepositories(client, org, targets.id, targets.names);
  context.out.result(outcomes, (list) => unlockMessage(list, context.out.theme));
  if (targets.names.length === 0) context.out.info(`migration ${targets.id} has no repositories to unlock`);
  const failure = unlockFailure(outcomes, targets.id);
  if (failure) throw failure;
  return outcomes;
}

function reportOf(result: MigrationUnlock, batch?: number, lostStart = false): MigrationReport {
  return {
    migration_id: result.migrationId,
    ...(batch === undefined ? {} : { batch }),
    ...(lostStart ? { lost_start: true as const } : {}),
    state: result.outcome === 'not-locked' ? 'not_locked' : result.outcome === 'not-found' ? 'not_found' : result.outcome,
    repositories: result.repositories.map(({ repository, ok, error }) => ({ repository, ok, ...(error === undefined ? {} : { error }) })),
    ...(result.error ? { error: result.error.message } : {}),
  };
}

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

function renderMigrations(context: Context, reports: MigrationReport[]): string {
  const lines = reports.map((report) => {
    const batch = report.batch === undefined ? '' : `batch ${report.batch}`;
    const head = report.migration_id === undefined
      ? batch
      : `migration ${report.migration_id}${batch ? ` (${batch}${report.lost_start ? ', found in the list: its start\'s answer was lost' : ''})` : ''}`;
    if (report.state === 'unlocked') {
      const body = unlockMessage(report.repositories, context.out.theme).split('\n').map((line) => `  ${line}`);
      return [`${head}:`, ...body].join('\n');
    }
    const words = report.migration_id === undefined && report.state === 'failed' ? 'its start could not be looked up' : STATE_WORDS[report.state];
    // The service's 404 only says again that the migration was not found: said once, with the organization.
    if (report.state === 'not_found') return `${head}: ${words} in organization ${context.org()}`;
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

/** Each migration whole; with `--output-dir`, every one its journal names, recorded once given back. */
async function unlockMany(context: Context, command: Exclude<UnlockCommand, { kind: 'one' }>): Promise<MigrationReport[]> {
  const client = await context.api();
  const org = context.org();
  if (command.kind === 'many') {
    const results = await unlockMigrations(client, org, command.ids);
    const reports = results.map((result) => reportOf(result));
    context.out.result({ migrations: reports }, (data) => renderMigrations(context, data.migrations));
    const failure = migrationsUnlockFailure(results, {
      retry: (ids) => `\`${commandLine(context.settings, `unlock ${ids.join(' ')} --all`)}\``,
      list: `\`${commandLine(context.settings, 'list')}\``,
    });
    if (failure) throw failure;
    return reports;
  }
  const { dir } = command;
  const locks = await journalMigrations(dir);
  // Not while an export runs there: it writes the journal and may be about to unlock or start.
  const lock = await lockDirectory(dir, { now: context.clock.now(), onNotice: (message) => context.out.warn(message), command: 'unlock' });
  try {
    const recorded = await unlockedRecord(dir);
    // A batch left `starting` may have a migration the journal never heard of: looked up as the export does.
    const lookups = await lookUpStarts(client, org, locks, context.clock.now());
    const lost = new Set(lookups.flatMap((found) => (found.migrationId === undefined ? [] : [found.migrationId])));
    const migrations = [
      ...locks.migrations,
      ...lookups.flatMap(({ migrationId, batch }) => (migrationId === undefined ? [] : [{ migrationId, batch, unlockedByExport: false }])),
    ];
    const reports = new Map<number, MigrationReport>();
    const todo = migrations.filter((m) => {
      const state = m.unlockedByExport ? 'unlocked_by_export' : recorded.has(m.migrationId) ? 'unlocked_before' : undefined;
      const lostStart = lost.has(m.migrationId) ? { lost_start: true as const } : {};
      if (state) reports.set(m.migrationId, { migration_id: m.migrationId, batch: m.batch, ...lostStart, state, repositories: [] });
      return state === undefined;
    });
    const results = await unlockMigrations(client, org, todo.map((m) => m.migrationId));
    const batchOf = new Map(migrations.map((m) => [m.migrationId, m.batch]));
    for (const result of results) {
      reports.set(result.migrationId, reportOf(result, batchOf.get(result.migrationId), lost.has(result.migrationId)));
    }
    await recordUnlocked(dir, results.filter(givenBack).map((result) => result.migrationId));
    const unfound: MigrationReport[] = lookups.flatMap((found) => {
      if (found.migrationId !== undefined) return [];
      const state = found.error ? 'failed' : 'start_not_found';
      return [{ batch: found.batch, state, repositories: [], ...(found.error ? { error: found.error.message } : {}) }];
    });
    const all = [...migrations.map((m) => reports.get(m.migrationId) as MigrationReport), ...unfound]
      .sort((a, b) => (a.batch ?? 0) - (b.batch ?? 0));
    context.out.result({ output_dir: dir, migrations: all }, (data) => renderMigrations(context, data.migrations));
    const again = `\`${commandLine(context.settings, `unlock --output-dir ${shellWord(dir)}`)}\``;
    const unlooked = lookups.flatMap((found) => (found.error ? [{ batch: found.batch, ...found.error }] : []));
    const failure = migrationsUnlockFailure(results, { retry: () => again, list: `\`${commandLine(context.settings, 'list')}\`` }, unlooked);
    if (failure) throw failure;
    return all;
  } finally {
    await lock.release();
  }
}

export function register(program: Command, run: Runner): void {
  program
    .command('unlock')
    .description('unlock repositories that a migration locked, or every one an `export --output-dir` locked')
    .argument('[migration-id]', 'the migration id (not needed with --repo or --output-dir)', parseMigrationId)
    .argument('[repos...]', 'repository names; with --all, more migration ids')
    .option('--all', 'every repository of the migration (of each migration given)')
    .option('--repo <name>', 'unlock this repository in the most recent migration that locked it (with --all: every repository of that migration)')
    .option('--output-dir <dir>', 'every repository the export in DIR locked and has not unlocked (read from its journal)')
    .addHelpText(
      'after',
      examples([
        'svc-migrate unlock 4242 widgets docs.site',
        'svc-migrate unlock 4242 4243 4250 --all',
        'svc-migrate unlock --repo widgets',
        'svc-migrate unlock --output-dir backup',
      ]),
    )
    .action((id: number | undefined, names: string[], flags: UnlockFlags, cmd: Command) =>
      run(
        cmd,
        () => parseUnlock(id, names, flags),
        async (context, command) => {
          if (command.kind === 'one') await unlockOne(context, command.request);
          else await unlockMany(context, command);
        },
      ),
    );
}
