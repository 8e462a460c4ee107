import type { Command } from 'commander';
import type { Context } from '../../context.js';
import type { DownloadOptions as CoreDownloadOptions, DownloadProgress } from '../../core/download.js';

export interface DownloadFlags {
  output?: string;
  force?: boolean;
  checksum?: boolean;
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
