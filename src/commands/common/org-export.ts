import { join, resolve } from 'node:path';
import type { Writable } from 'node:stream';
import type { Context, Invocation } from '../../context.js';
import { fingerprintOf, heldBy } from '../../core/org-export/journal.js';
import { type Plan, planExport } from '../../core/org-export/plan.js';
import { DEFAULT_BATCH_SIZE, DEFAULT_PARALLEL, type OrgExportResult, runOrgExport } from '../../core/org-export/run.js';
import { OrgExportStoppedError } from '../../core/org-export/outcome.js';
import type { BatchRecord } from '../../core/org-export/journal.js';
import { unlockedRecord } from '../../core/journal-locks.js';
import { CliError, ExitCode, InterruptedError, UsageError } from '../../errors.js';
import { shellWord } from '../../support/shell-word.js';
import { counted } from '../../ui/format.js';
import { createOrgExportReporter, type DryRun, dryRunFooter, dryRunTable, orgExportFooter, orgExportTable, shownState, snakeKeys } from '../../ui/org-export.js';
import { checkConfirmable, confirmDeletion } from './confirm.js';
import type { DownloadFlags } from './download.js';
import { commandLine } from './command-line.js';
import { collectRepositories, type StartFlags, startBody, startFlagsOf, type WaitFlags, type WaitSettings } from './flags.js';

/** The flags of `export`, with or without --output-dir. */
export interface ExportOptions extends StartFlags, DownloadFlags, WaitFlags {
  unlock?: boolean;
  deleteArchive?: boolean;
  yes?: boolean;
}

export interface OrgExportFlags {
  outputDir?: string;
  batchSize?: number;
  parallel?: number;
  restart?: boolean;
  dryRun?: boolean;
}

/** The checks of `export --output-dir`'s flags that need nothing read (exportOrganization relies on them). */
export function checkOrgExportFlags(options: ExportOptions & OrgExportFlags, invocation: Invocation): void {
  const dir = options.outputDir as string;
  if (options.output !== undefined) {
    throw new UsageError('--output and --output-dir do not go together', {
      hint: 'with --output-dir every batch is saved as DIR/migration-<id>.tar.gz',
    });
  }
  if ((options.unlock || options.deleteArchive) && options.verify === false) {
    // An unverified archive is never a reason to release anything: refused before any request.
    throw new UsageError(`${options.unlock ? '--unlock' : '--delete-archive'} needs a verified archive: drop --no-verify`, {
      hint: `export with --no-verify alone, check each archive with \`svc-migrate archive verify ${join(dir, 'migration-<id>.tar.gz')}\`, then \`svc-migrate delete-archive <id>\` for each, and \`svc-migrate unlock --output-dir ${shellWord(dir)}\` gives back every repository the export locked`,
    });
  }
  if (options.deleteArchive && !options.dryRun) checkConfirmable(options.yes, invocation);
}

/** `export --output-dir`: the whole list as batches, in parallel, resumable from the journal in the directory. */
export async function exportOrganization(
  context: Context,
  args: string[],
  options: ExportOptions & OrgExportFlags,
  wait: WaitSettings,
): Promise<OrgExportResult | undefined> {
  const dir = options.outputDir as string;
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const parallel = options.parallel ?? DEFAULT_PARALLEL;
  const { repositories } = await collectRepositories(context, args, options);
  if (repositories.length === 0) {
    throw new UsageError('no repositories to export', { hint: 'give them with --repos-file FILE or as arguments' });
  }
  const { repositories: _names, ...body } = startBody(repositories, options);
  if (options.deleteArchive && !options.dryRun) {
    await confirmDeletion(
      context,
      'Delete each archive from the service once it is saved and verified?',
      options.yes,
    );
  }
  const org = context.org();
  const flags = {
    unlock: Boolean(options.unlock),
    deleteArchive: Boolean(options.deleteArchive),
    checksum: options.checksum !== false,
    verify: options.verify !== false,
  };
  // What is done to the service and how it is batched; the list may change between runs (the plan
  // keeps what is done and still wanted), and so may pace and display flags.
  const fingerprint = fingerprintOf({ org, batchSize, body, ...flags, list: 'reconciled' });
  const legacyFingerprint = fingerprintOf({ org, repositories, batchSize, body, ...flags });
  const command = [
    'export',
    ...(options.reposFile ? ['--repos-file', options.reposFile] : args),
    '--batch-size',
    String(batchSize),
    '--output-dir',
    dir,
    ...startFlagsOf(body),
    ...(flags.unlock ? ['--unlock'] : []),
    ...(flags.deleteArchive ? ['--delete-archive'] : []),
    ...(flags.checksum ? [] : ['--no-checksum']),
    ...(flags.verify ? [] : ['--no-verify']),
  ].join(' ');

  const planning = {
    org,
    dir: resolve(dir),
    repositories,
    batchSize,
    fingerprint,
    legacyFingerprint,
    command,
    restart: Boolean(options.restart),
  };
  if (options.dryRun) {
    const plan = await planExport({ ...planning, now: context.clock.now() });
    const summary = dryRunSummary(plan, repositories);
    context.out.result(summary, (data) => dryRunTable(data, context.out.theme, context.out.layout));
    if (context.out.layout.plain && !context.out.json) context.out.info(dryRunFooter(summary));
    return undefined;
  }

  const client = await context.api();
  const reporter = createOrgExportReporter(context.out, context.io.stderr as Writable & { columns?: number });
  let result: OrgExportResult;
  try {
    result = await runOrgExport(client, {
      ...planning,
      parallel,
      body,
      ...flags,
      ...wait,
      clock: context.clock,
      signal: context.signal,
      onEvent: (event) => reporter.onEvent(event),
    });
  } catch (error) {
    // Stopped (Ctrl-C, a signal, this machine): the owner must hear what stays locked, and how to give it back.
    if (!(error instanceof OrgExportStoppedError)) throw error;
    throw withLocked(context, error.error, await lockedSummary(context, dir, error.batches, Boolean(body.lock_repositories), flags.unlock));
  } finally {
    reporter.stop();
  }
  const summary = {
    type: 'summary',
    ok: result.exitCode === 0,
    exit_code: result.exitCode,
    repositories: result.repositories,
    verified_repositories: result.verifiedRepositories,
    archived_repositories: result.archivedRepositories,
    // A repository at fault names the migration that failed with it alone.
    skipped: result.skipped.map(({ migrationId, ...skipped }) => ({
      ...skipped,
      ...(migrationId === undefined ? {} : { migration_id: migrationId }),
    })),
    journal: result.journalPath,
    batches: result.batches.map((batch) => ({
      batch: batch.index,
      repositories: batch.repositories.length,
      state: shownState(batch.state),
      migration_ids: batch.migrationIds,
      ...(batch.archive ? { archive: snakeKeys(batch.archive) } : {}),
      ...(batch.error ? { error: snakeKeys(batch.error) } : {}),
    })),
    poll_requests: result.pollRequests,
    ...(await lockedSummary(context, dir, result.batches, Boolean(body.lock_repositories), flags.unlock)),
  };
  const { layout } = context.out;
  context.out.line(summary, () => orgExportTable(result, context.out.theme, layout));
  if (layout.plain && !context.out.json) context.out.info(orgExportFooter(result));
  if (!flags.verify && result.archivedRepositories > 0) {
    context.out.warn(
      `nothing was verified (--no-verify): the archives in ${dir} were saved unchecked; \`svc-migrate archive verify ${join(dir, 'migration-<id>.tar.gz')}\` checks one`,
    );
  }
  // A failure carries the locked line in its message (--json errors too); a success says it last.
  if (result.exitCode !== 0) throw withLocked(context, orgExportFailure(result), summary);
  // With --json, the summary carries it for a script and stderr for whoever watches.
  if (summary.locked > 0) {
    const line = lockedLine(context, summary.locked, summary.unlock_command);
    if (context.out.json) context.out.warn(line);
    else context.out.info(line);
  }
  return result;
}

/** Why the export did not end with every repository in a verified archive, and what to do. */
function orgExportFailure(result: OrgExportResult): CliError {
  const journal = `the journal ${result.journalPath}`;
  const n = result.skipped.length;
  const atFault = result.skipped.filter((s) => s.migrationId !== undefined).length;
  const why = atFault === 0 ? 'the service refused' : atFault === n ? 'the service could not export' : 'the service refused or could not export';
  // A repository at fault is not asked about again: its migration failed with it alone (narrow.ts).
  const fault = atFault === 0
    ? ''
    : `; ${atFault === 1 ? 'the repository at fault stays' : `the ${atFault} at fault stay`} skipped in later runs (the service failed a migration of ${atFault === 1 ? 'it' : 'each'} alone)`;
  if (result.repositories > 0 && n === result.repositories) {
    // Nothing at all was archived: a refused request (exit 5), not a partial export.
    return new CliError(
      `nothing was exported: ${why} ${result.repositories === 1 ? 'the only repository' : `all ${result.repositories} repositories`} (${listed(result.skipped.map((s) => s.name))})`,
      result.exitCode as CliError['exitCode'],
      { hint: `${journal} records each with ${atFault === 0 ? 'the service\'s' : 'its'} reason; correct the list and run the same command again${fault}` },
    );
  }
  if (result.exitCode === ExitCode.Partial) {
    return new CliError(
      `the export is partial: ${why} ${n} of ${counted(result.repositories, 'repository', 'repositories')}, so ${n === 1 ? 'it was' : 'they were'} skipped (${listed(result.skipped.map((s) => s.name))})`,
      ExitCode.Partial,
      { hint: `${journal} records each with its reason; correct the list and run the same command again: the batches done are kept, and only what is missing is exported${fault}` },
    );
  }
  const failed = result.batches.filter((b) => b.error || !['done', 'skipped', 'narrowed'].includes(b.state)).map((b) => b.index);
  const named = failed.length > 0 ? `batch ${failed.join(', ')}` : '';
  const unverified = result.repositories - result.verifiedRepositories - result.skipped.length;
  return new CliError(
    unverified > 0
      ? `${unverified} of ${counted(result.repositories, 'repository', 'repositories')} ${unverified === 1 ? 'is' : 'are'} not in a verified archive${named ? ` (${named})` : ''}`
      : `${allIn(result.repositories - result.skipped.length)}, but ${named || 'a batch'} stopped before its last step`,
    result.exitCode as CliError['exitCode'],
    { hint: `${journal} says where each batch stopped; run the same command again to continue` },
  );
}

/** The first names of a list, and how many more. */
function listed(names: string[], shown = 10): string {
  return names.length > shown ? `${names.slice(0, shown).join(', ')}, … and ${names.length - shown} more` : names.join(', ');
}

/** What `--dry-run` prints: the plan, each batch as the journal has it, and what a run would start. */
function dryRunSummary(plan: Plan, wanted: string[]): DryRun {
  const wantedKeys = new Set(wanted.map((name) => name.toLowerCase()));
  return {
    dry_run: true,
    journal: plan.journalPath,
    resumed: plan.resumed,
    repositories: wantedKeys.size,
    batches: plan.journal.batches.map((batch) => ({
      batch: batch.index,
      repositories: batch.repositories,
      state: shownState(batch.state),
      migration_ids: batch.migrationIds,
      planned: batch.index > plan.kept ? 'new' : 'journal',
      ...(batch.archive ? { archive: snakeKeys(batch.archive) } : {}),
    })),
    dropped_batches: plan.dropped,
    to_start: plan.journal.batches.filter((b) => b.state === 'pending' || b.state === 'failed').length,
  };
}

/** `all 3 repositories are in verified archives`, `the 1 repository is in a verified archive`. */
function allIn(count: number): string {
  return count === 1 ? 'the 1 repository is in a verified archive' : `all ${count} repositories are in verified archives`;
}

/** The error that ends a run, naming what it leaves locked, or may have, and the command that unlocks it. */
function withLocked(context: Context, error: CliError, locked: LockedSummary): CliError {
  if (locked.locked === 0 && locked.may_be_locked === 0) return error;
  const said = [
    ...(locked.locked > 0 ? [lockedLine(context, locked.locked, locked.unlock_command)] : []),
    ...(locked.may_be_locked > 0 ? [mayBeLockedLine(context, locked.may_be_locked, locked.unlock_command)] : []),
  ];
  const message = `${error.message}; ${said.join('; ')}`;
  const details = { hint: error.hint, cause: error, ...(error.status === undefined ? {} : { status: error.status }) };
  // Still an interruption, so that SIGTERM and SIGHUP keep their exit codes (main.ts).
  if (error instanceof InterruptedError) return new InterruptedError(message, details, error.exitCode);
  return new CliError(message, error.exitCode, details);
}

interface LockedSummary {
  locked: number;
  /** Repositories of batches left `starting` (a start sent, its answer lost): locked if it reached the service. */
  may_be_locked: number;
  unlock_command: string | null;
}

/**
 * Repositories of batches this export locked and did not unlock, and the one command that gives
 * them all back (`unlock --output-dir`, which reads the journal and looks up a batch left
 * `starting`). Migrations that command already gave back are not counted; a record of it that
 * cannot be read counts nothing as given back. A narrowed batch's failed migrations were unlocked
 * when they failed (`released`), with --unlock.
 */
async function lockedSummary(
  context: Context,
  dir: string,
  batches: BatchRecord[],
  lock: boolean,
  unlock: boolean,
): Promise<LockedSummary> {
  const givenBack = await unlockedRecord(dir).catch((): Set<number> => new Set());
  const locked = lock
    ? batches.filter(
        (batch) =>
          batch.migrationIds.some((id) => !givenBack.has(id)) &&
          !batch.released &&
          !(unlock && (batch.state === 'unlocked' || batch.state === 'done')),
      )
    : [];
  // Each repository once, however many migrations hold it (a narrowed batch's and its halves').
  const lockedNames = new Set(locked.flatMap((batch) => heldBy(batch).map((name) => name.toLowerCase())));
  const count = lockedNames.size;
  const starting = lock ? batches.filter((batch) => batch.state === 'starting') : [];
  const startingNames = starting.flatMap((batch) => batch.repositories.map((name) => name.toLowerCase()));
  const mayBe = new Set(startingNames.filter((name) => !lockedNames.has(name))).size;
  return {
    locked: count,
    may_be_locked: mayBe,
    unlock_command: count + mayBe === 0 || context.settings.sandbox ? null : commandLine(context.settings, `unlock --output-dir ${shellWord(dir)}`),
  };
}

/** The line for batches left `starting`: their start may have locked their repositories unseen. */
function mayBeLockedLine(context: Context, count: number, command: string | null): string {
  const what = `${counted(count, 'repository', 'repositories')} of batches whose start was sent but never answered`;
  const may = `${count === 1 ? 'is' : 'are'} locked if that start reached the service`;
  if (context.settings.sandbox || command === null) return `${what} ${may}, in the in-process sandbox that stopped with this command`;
  return `${what} ${may}; \`${command}\` looks each up and unlocks what it finds`;
}

/** The line that ends a run leaving repositories locked. */
function lockedLine(context: Context, count: number, command: string | null): string {
  const what = counted(count, 'repository', 'repositories');
  if (context.settings.sandbox || command === null) return `${what} ${count === 1 ? 'was' : 'were'} left locked, in the in-process sandbox that stopped with this command`;
  return `${what} ${count === 1 ? 'is' : 'are'} still locked; \`${command}\` unlocks ${count === 1 ? 'it' : 'them'}`;
}
