import type { Command } from 'commander';
import type { Context, Runner } from '../context.js';
import {
  type DownloadOptions as CoreDownloadOptions,
  type DownloadProgress,
  downloadArchive,
} from '../core/download.js';
import { type DownloadSummary, downloadMessage } from '../ui/tables.js';
import { parseMigrationId } from './options.js';
import { addWaitOptions, type WaitFlags } from './shared.js';
import { failIfAnyFailed, waitAndReport } from './status.js';

export interface DownloadFlags {
  output?: string;
  force?: boolean;
  checksum?: boolean;
}

export interface DownloadCommandOptions extends DownloadFlags, WaitFlags {
  wait?: boolean;
}

export function addDownloadOptions(command: Command): Command {
  return command
    .option('-o, --output <file>', 'where to save the archive (default migration-<id>.tar.gz); - for stdout')
    .option('--force', 'overwrite an existing file')
    .option('--no-checksum', 'skip the sha256 (a little faster)');
}

/** The download part of the options, and how its progress is shown. */
export function downloadSettings(context: Context, flags: DownloadFlags) {
  const toStdout = flags.output === '-';
  const bar = context.out.progress();
  const settings = {
    target: (id: number): CoreDownloadOptions['target'] =>
      toStdout
        ? { stream: context.io.stdout as NodeJS.WritableStream }
        : { path: flags.output ?? `migration-${id}.tar.gz`, force: Boolean(flags.force) },
    checksum: flags.checksum !== false,
    onProgress: (progress: DownloadProgress) => bar.update(progress),
    onNotice: (message: string) => context.out.warn(message),
  };
  return { settings, bar, toStdout };
}

/** Publishes a finished download: on stdout, unless stdout carried the archive itself. */
function reportDownload(context: Context, summary: DownloadSummary, toStdout: boolean): void {
  if (toStdout) context.out.info(context.out.json ? JSON.stringify(summary) : downloadMessage(summary));
  else context.out.result(summary, downloadMessage);
}

/** docs/service.md#download-archive: stream a migration's archive to disk, resumably, verified. */
export async function download(
  context: Context,
  id: number,
  options: DownloadCommandOptions,
): Promise<DownloadSummary> {
  const client = await context.api();
  if (options.wait) failIfAnyFailed(await waitAndReport(context, [id], options));
  const { settings, bar, toStdout } = downloadSettings(context, options);
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
  const summary: DownloadSummary = {
    migration_id: id,
    path: result.path,
    bytes: result.bytes,
    ...(result.sha256 ? { sha256: result.sha256 } : {}),
  };
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
      `
Examples:
  svc-migrate download 4242
  svc-migrate download 4242 -o archives/acme.tar.gz --wait
  svc-migrate download 4242 -o - | tar -tz`,
    )
    .action((id: number, options: DownloadCommandOptions, cmd: Command) =>
      run(cmd, async (context) => {
        await download(context, id, options);
      }),
    );
}
