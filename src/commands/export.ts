import type { Command } from 'commander';
import type { Context, Runner } from '../context.js';
import { type ExportReport, runExport } from '../core/export.js';
import { UsageError } from '../errors.js';
import { downloadMessage } from '../ui/tables.js';
import { type ExportOptions, exportOrganization, type OrgExportFlags } from './common/org-export.js';
import { examples, parsePositiveInt } from './common/options.js';
import { createWaitReporter } from '../ui/wait.js';
import { confirmDeletion } from './common/confirm.js';
import { addDownloadOptions, archiveSummary, checkDownloadTarget, downloadCommand, downloadSettings, warnIfUnverified } from './common/download.js';
import {
  addStartOptions,
  addWaitOptions,
  collectRepositories,
  refineInteractively,
  startBody,
  waitSettings,
} from './common/flags.js';

/** The main job: start → wait → download, then --unlock and --delete-archive once the archive is safe. */
async function exportRepositories(
  context: Context,
  args: string[],
  options: ExportOptions,
): Promise<ExportReport> {
  checkDownloadTarget(context, options);
  if (options.output === '-' && options.deleteArchive) {
    throw new UsageError('--delete-archive needs the archive saved to a file, not -o -');
  }
  // Unlocking and deleting wait for a verified archive; these combinations could never get one.
  if ((options.unlock || options.deleteArchive) && (options.output === '-' || options.verify === false)) {
    throw new UsageError(
      `${options.unlock ? '--unlock' : '--delete-archive'} needs a verified archive: ${options.output === '-' ? 'save it to a file, not -o -' : 'drop --no-verify'}`,
      { hint: 'or unlock and delete-archive by hand after `svc-migrate archive verify <file>`' },
    );
  }
  const { repositories, asked } = await collectRepositories(context, args, options);
  const body = await refineInteractively(context, startBody(repositories, options), asked);
  if (options.deleteArchive) {
    await confirmDeletion(context, 'Delete the archive from the service once it is saved and verified?', options.yes);
  }
  const client = await context.api();
  const { out } = context;
  const reporter = await createWaitReporter(out, []);
  const { settings, bar, toStdout } = downloadSettings(context, options, (id) => downloadCommand(context, id, options), false);
  let report: ExportReport;
  try {
    report = await runExport(client, {
      org: context.org(),
      body,
      download: settings,
      unlock: Boolean(options.unlock),
      deleteArchive: Boolean(options.deleteArchive),
      ...waitSettings(options),
      clock: context.clock,
      signal: context.signal,
      onStep: (step, detail) => {
        if (step === 'wait') reporter.stop();
        out.success(detail);
      },
      onWaitEvent: (event) => reporter.onEvent(event),
      onNotice: (message) => out.warn(message),
    });
  } finally {
    reporter.stop();
    bar.done();
  }
  const summary = {
    migration: report.migration,
    archive: archiveSummary(report.download),
    unlocked: report.unlocked.map((o) => o.repository),
    archive_deleted: report.archiveDeleted,
  };
  warnIfUnverified(context, report.download.verified, report.download.path);
  const human = () =>
    `${downloadMessage({ migration_id: report.migration.id, ...summary.archive })}\nexport of migration ${report.migration.id} complete`;
  if (toStdout) out.info(out.json ? JSON.stringify(summary) : human());
  else out.result(summary, human);
  return report;
}

export function register(program: Command, run: Runner): void {
  const command = program
    .command('export')
    .description('the whole job: start an export, wait, download the archive, then optionally unlock and clean up')
    .argument('[repos...]', 'repositories as <repo> (of --org) or <owner>/<repo>');
  addStartOptions(command);
  addDownloadOptions(command)
    .option('--unlock', 'unlock the repositories once the archive is verified on disk')
    .option('--delete-archive', 'delete the archive from the service once it is verified on disk')
    .option('-y, --yes', 'do not ask before deleting the archive (required without a terminal)');
  addWaitOptions(command)
    .option('--output-dir <dir>', 'export in batches into DIR (migration-<id>.tar.gz each, and a journal to resume from)')
    .option('--batch-size <n>', 'with --output-dir: repositories per migration (default 50)', parsePositiveInt)
    .option('--parallel <n>', 'with --output-dir: migrations running at once (default 4)', parsePositiveInt)
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
    .action((repos: string[], options: ExportOptions & OrgExportFlags, cmd: Command) =>
      run(cmd, async (context) => {
        if (options.outputDir !== undefined) await exportOrganization(context, repos, options);
        else if (options.batchSize !== undefined || options.parallel !== undefined || options.restart || options.dryRun) {
          throw new UsageError('--batch-size, --parallel, --restart and --dry-run go with --output-dir');
        } else await exportRepositories(context, repos, options);
      }),
    );
}
