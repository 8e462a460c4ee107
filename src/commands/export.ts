import type { Command } from 'commander';
import type { Context, Invocation, Runner } from '../context.js';
import { type ExportReport, ExportStoppedError, runExport } from '../core/export.js';
import { CliError, UsageError, ValidationError } from '../errors.js';
import { inertText } from '../support/outside-text.js';
import { commandLine, restateHint } from './common/command-line.js';
import { downloadMessage } from '../ui/tables.js';
import { checkOrgExportFlags, type ExportOptions, exportOrganization, type OrgExportFlags } from './common/org-export.js';
import { checkNotEmpty, examples, parsePositiveInt } from './common/options.js';
import { startAsking } from './common/start.js';
import { createWaitReporter } from '../ui/wait.js';
import { checkConfirmable, confirmDeletion } from './common/confirm.js';
import { addDownloadOptions, archiveSummary, checkDownloadTarget, downloadCommand, downloadSettings, warnIfUnverified } from './common/download.js';
import {
  addStartOptions,
  addWaitOptions,
  checkRepositoryFlags,
  collectRepositories,
  refineInteractively,
  startBody,
  type WaitSettings,
  waitSettings,
} from './common/flags.js';

type ExportFlags = ExportOptions & OrgExportFlags & { new?: boolean };

interface ExportCommandOptions {
  /** Repositories named as arguments. */
  args: string[];
  flags: ExportFlags;
  wait: WaitSettings;
}

function parseExportOptions(args: string[], flags: ExportFlags, invocation: Invocation): ExportCommandOptions {
  checkNotEmpty(flags.outputDir, '--output-dir', 'name the directory to export into, or leave --output-dir out for one archive');
  if (flags.outputDir !== undefined && flags.new) {
    throw new UsageError('--new goes without --output-dir', { hint: 'with --output-dir the journal says what is done; --restart plans the export anew' });
  }
  if (flags.outputDir !== undefined) checkOrgExportFlags(flags, invocation);
  else if (flags.batchSize !== undefined || flags.parallel !== undefined || flags.restart || flags.dryRun) {
    throw new UsageError('--batch-size, --parallel, --restart and --dry-run go with --output-dir');
  } else checkSingleExportFlags(flags, invocation);
  checkRepositoryFlags(args, flags, invocation);
  return { args, flags, wait: waitSettings(flags) };
}

/** What refuses an export to one archive before anything starts: where it goes, and what it does once saved. */
function checkSingleExportFlags(flags: ExportOptions, invocation: Invocation): void {
  checkDownloadTarget(invocation, flags);
  if (flags.output === '-' && flags.deleteArchive) {
    throw new UsageError('--delete-archive needs the archive saved to a file, not -o -');
  }
  // Unlocking and deleting wait for a verified archive; these combinations could never get one.
  if ((flags.unlock || flags.deleteArchive) && (flags.output === '-' || flags.verify === false)) {
    throw new UsageError(
      `${flags.unlock ? '--unlock' : '--delete-archive'} needs a verified archive: ${flags.output === '-' ? 'save it to a file, not -o -' : 'drop --no-verify'}`,
      { hint: 'or unlock and delete-archive by hand after `svc-migrate archive verify <file>`' },
    );
  }
  if (flags.deleteArchive) checkConfirmable(flags.yes, invocation);
}

/** The main job: start → wait → download, then --unlock and --delete-archive once the archive is safe. */
async function exportRepositories(
  context: Context,
  args: string[],
  options: ExportOptions & { new?: boolean },
  wait: WaitSettings,
): Promise<ExportReport> {
  const resumeCommand = (id: number) => downloadCommand(context.settings, id, options);
  // The same export continues the migration and its `.part` (docs/cli.md#export); with --new it would start another.
  const { settings, bar, toStdout, checkTarget } = downloadSettings(context, options, resumeCommand, !options.new);
  // Whatever would refuse the archive at the end refuses it now, before a repository is locked.
  await checkTarget();
  const { repositories, asked } = await collectRepositories(context, args, options);
  let askedDeletion = false;
  const body = await refineInteractively(context, startBody(repositories, options), asked, async (chosen) => {
    // What happens once the archive is safe: asked here, where the owner decides to lock.
    if (toStdout || options.verify === false) return [];
    const then: string[] = [];
    if (chosen.lock_repositories && !options.unlock) {
      options.unlock = await context.prompt.confirm('Unlock the repositories once the archive is saved and verified?', 'an answer', '--unlock', true);
    }
    if (chosen.lock_repositories) then.push(options.unlock ? 'unlock the repositories' : 'leave the repositories locked');
    if (!options.deleteArchive) {
      options.deleteArchive = await context.prompt.confirm('Delete the archive from the service once it is saved and verified?', 'an answer', '--delete-archive');
      askedDeletion = true;
    }
    then.push(options.deleteArchive ? 'delete the archive from the service' : 'keep the archive on the service');
    return then;
  });
  if (options.deleteArchive && !askedDeletion) {
    await confirmDeletion(context, 'Delete the archive from the service once it is saved and verified?', options.yes);
  }
  const client = await context.api();
  const { out } = context;
  /** Whether this attempt's migration began: a failure before it started nothing. */
  let begun = false;
  const attempt = async (repositories: string[]) => {
    begun = false;
    const reporter = await createWaitReporter(out, []);
    try {
      return await runExport(client, {
        org: context.org(),
        body: { ...body, repositories },
        download: settings,
        unlock: Boolean(options.unlock),
        deleteArchive: Boolean(options.deleteArchive),
        fresh: Boolean(options.new),
        ...wait,
        clock: context.clock,
        signal: context.signal,
        onStep: (step, detail) => {
          begun = true;
          if (step === 'wait') reporter.stop();
          // A step names what the service said: the migration's state, the repositories it unlocked.
          out.success(inertText(detail));
        },
        onWaitEvent: (event) => reporter.onEvent(event),
        // As the wait's own notices: a failed check quotes the service, drawn inert.
        onNotice: (message) => reporter.onNotice(restateHint(message, context.settings)),
      });
    } finally {
      reporter.stop();
    }
  };
  // The export says the start's 422 as its own failure, the service's error as its cause.
  const refusal = (error: unknown) => {
    const said = error instanceof CliError && error.cause instanceof ValidationError ? error.cause : error;
    return !begun && said instanceof ValidationError ? said : undefined;
  };
  let report: ExportReport;
  try {
    report = await startAsking(context, body.repositories, asked, attempt, refusal);
  } catch (error) {
    if (!(error instanceof ExportStoppedError)) throw error;
    // Stopped with repositories locked: the owner must hear which, and how to give them back.
    throw new CliError(`${error.message}; ${lockedLine(context, error.migrationId, error.locked)}`, error.exitCode, {
      ...(error.hint ? { hint: error.hint } : {}),
      cause: error,
      ...(error.status === undefined ? {} : { status: error.status }),
    });
  } finally {
    bar.done();
  }
  const id = report.migration.id;
  const summary = {
    migration: report.migration,
    archive: archiveSummary(report.download),
    unlocked: report.unlocked.map((o) => o.repository),
    archive_deleted: report.archiveDeleted,
    locked: report.locked,
    unlock_command: report.locked.length > 0 && !context.settings.sandbox ? unlockCommand(context, id) : null,
  };
  warnIfUnverified(context, report.download.verified, report.download.path);
  const human = () =>
    [
      downloadMessage({ migration_id: id, ...summary.archive }),
      `export of migration ${id} complete`,
      ...(report.locked.length > 0 ? [inertText(lockedLine(context, id, report.locked))] : []),
    ].join('\n');
  if (toStdout) out.info(out.json ? JSON.stringify(summary) : human());
  else out.result(summary, human);
  // A script reads the JSON; whoever watches its stderr hears of the lock too.
  if (out.json && report.locked.length > 0) out.warn(inertText(lockedLine(context, id, report.locked)));
  return report;
}

function unlockCommand(context: Context, id: number): string {
  return commandLine(context.settings, `unlock ${id} --all`);
}

/** How many repositories this run leaves locked, which, and the command that unlocks them. */
function lockedLine(context: Context, id: number, locked: string[]): string {
  const shown = locked.length > 10 ? `${locked.slice(0, 10).join(', ')} and ${locked.length - 10} more` : locked.join(', ');
  const count = locked.length === 1 ? '1 repository' : `${locked.length} repositories`;
  if (context.settings.sandbox) {
    return `${count} ${locked.length === 1 ? 'was' : 'were'} left locked (${shown}), in the in-process sandbox that stopped with this command`;
  }
  return `${count} ${locked.length === 1 ? 'is' : 'are'} still locked (${shown}): \`${unlockCommand(context, id)}\` unlocks ${locked.length === 1 ? 'it' : 'them'}`;
}

export function register(program: Command, run: Runner): void {
  const command = program
    .command('export')
    .description('the whole job: start an export, wait, download the archive, then optionally unlock and clean up')
    .argument('[repos...]', 'repositories: name (of --org) or owner/name');
  addStartOptions(command);
  addDownloadOptions(command)
    .option('--unlock', 'unlock the repositories once the archive is verified on disk')
    .option('--delete-archive', 'delete the archive from the service once it is verified on disk')
    .option('-y, --yes', 'do not ask before deleting the archive (required without a terminal)')
    .option('--new', 'start a new migration even if an earlier run left one of exactly these repositories to continue');
  addWaitOptions(command)
    .option('--output-dir <dir>', 'export in batches into DIR (migration-<id>.tar.gz each, and a journal to resume from)')
    .option('--batch-size <n>', 'with --output-dir: repositories per migration (default 50)', parsePositiveInt)
    .option('--parallel <n>', 'with --output-dir: migrations and downloads at once (default 4)', parsePositiveInt)
    .option('--restart', 'with --output-dir: plan anew even if DIR holds the journal of another export')
    .option('--dry-run', 'with --output-dir: print the plan and what the journal says is done; send nothing')
    .addHelpText(
      'after',
      examples([
        'svc-migrate export widgets docs.site --lock --unlock',
        'svc-migrate export --repos-file repos.txt -o acme.tar.gz --delete-archive --yes',
        'svc-migrate export Hello-World --sandbox --yes',
        'svc-migrate export --repos-file all.txt --output-dir backup --batch-size 50 --parallel 4 --lock --unlock',
      ]),
    )
    .action((repos: string[], flags: ExportFlags, cmd: Command) =>
      run(
        cmd,
        (invocation) => parseExportOptions(repos, flags, invocation),
        async (context, { args, flags: given, wait }) => {
          if (given.outputDir !== undefined) await exportOrganization(context, args, given, wait);
          else await exportRepositories(context, args, given, wait);
        },
      ),
    );
}
