import type { Command } from 'commander';
import type { Context, Invocation, Runner } from '../context.js';
import { downloadArchive } from '../core/download.js';
import { type DownloadSummary, downloadMessage } from '../ui/tables.js';
import {
  addDownloadOptions,
  archiveSummary,
  checkDownloadTarget,
  downloadCommand,
  type DownloadFlags,
  downloadSettings,
  warnIfUnverified,
} from './common/download.js';
import { examples, parseMigrationId } from './common/options.js';
import { addWaitOptions, type WaitFlags, type WaitSettings, waitSettings } from './common/flags.js';
import { failIfAnyFailed, waitAndReport } from './common/wait.js';

interface DownloadCommandFlags extends DownloadFlags, WaitFlags {
  wait?: boolean;
}

interface DownloadCommandOptions {
  id: number;
  download: DownloadFlags;
  /** With --wait: how. */
  wait?: WaitSettings;
}

function parseDownloadOptions(id: number, flags: DownloadCommandFlags, invocation: Invocation): DownloadCommandOptions {
  const { wait, interval, timeout, ...download } = flags;
  const { settings } = invocation;
  // Before any request: a wait or a migration's check would only delay the refusal.
  const ways = { pipe: downloadCommand(settings, id, download), save: downloadCommand(settings, id, { ...download, output: undefined }) };
  checkDownloadTarget(invocation, download, ways);
  return { id, download, ...(wait ? { wait: waitSettings({ interval, timeout }) } : {}) };
}

/** Publishes a finished download: on stdout, unless stdout carried the archive itself. */
function reportDownload(context: Context, summary: DownloadSummary, toStdout: boolean): void {
  if (toStdout) context.out.info(context.out.json ? JSON.stringify(summary) : downloadMessage(summary));
  else context.out.result(summary, downloadMessage);
}

/** docs/service.md#download-archive: stream a migration's archive to disk, resumably, verified. */
async function download(context: Context, { id, download: flags, wait }: DownloadCommandOptions): Promise<DownloadSummary> {
  const command = downloadCommand(context.settings, id, flags);
  const { settings, bar, toStdout, checkTarget } = downloadSettings(context, flags, () => command, true);
  // A file in the way, or a directory that cannot take it, is said before any wait or request.
  await checkTarget();
  const client = await context.api();
  if (wait) failIfAnyFailed(await waitAndReport(context, [id], wait));
  let result: Awaited<ReturnType<typeof downloadArchive>>;
  try {
    result = await downloadArchive(client, {
      ...settings,
      target: settings.target(id),
      org: context.org(),
      id,
      clock: context.clock,
    });
  } finally {
    bar.done();
  }
  const summary: DownloadSummary = { migration_id: id, ...archiveSummary(result) };
  warnIfUnverified(context, result.verified, result.path);
  reportDownload(context, summary, toStdout);
  return summary;
}

export function register(program: Command, run: Runner): void {
  const command = program
    .command('download')
    .description('stream a migration\'s archive to disk (resumable, verified, never a partial file)')
    .argument('<migration-id>', 'the migration id', parseMigrationId);
  addDownloadOptions(command).option('--wait', 'wait until the migration is exported first');
  addWaitOptions(command)
    .addHelpText(
      'after',
      examples([
        'svc-migrate download 4242',
        'svc-migrate download 4242 -o archives/acme.tar.gz --wait',
        'svc-migrate download 4242 -o - | tar -tz',
      ]),
    )
    .action((id: number, flags: DownloadCommandFlags, cmd: Command) =>
      run(
        cmd,
        (invocation) => parseDownloadOptions(id, flags, invocation),
        async (context, options) => {
          await download(context, options);
        },
      ),
    );
}
