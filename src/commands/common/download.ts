import { statSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import type { Command } from 'commander';
import type { Context, Invocation } from '../../context.js';
import { checkDestination, type Destination } from '../../core/destination.js';
import type { DownloadOptions as CoreDownloadOptions, DownloadProgress, DownloadResult } from '../../core/download.js';
import { UsageError } from '../../errors.js';
import type { Settings } from '../../settings/resolve.js';
import { shellWord } from '../../support/shell-word.js';
import { formatBytes } from '../../ui/format.js';
import type { DownloadSummary } from '../../ui/tables.js';
import { parseByteSize } from './options.js';

export interface DownloadFlags {
  output?: string;
  force?: boolean;
  checksum?: boolean;
  maxSize?: number;
  verify?: boolean;
}

export function addDownloadOptions(command: Command): Command {
  return command
    .option('-o, --output <file>', 'where to save the archive (default migration-<id>.tar.gz; a directory holds that name); - for stdout')
    .option('--force', 'overwrite an existing file')
    .option('--no-checksum', 'skip the sha256 and write no <file>.sha256 (a little faster)')
    .option('--no-verify', 'UNSAFE: skip checking the archive after the download (see `archive verify`)')
    .option('--max-size <bytes>', 'largest archive accepted when storage announces no length, e.g. 500M (default 100G; less when the disk has less free)', parseByteSize);
}

/**
 * Where the archive of migration `id` goes: `-o <file>` as given; `-o <existing directory>` (or a
 * path ending in /) holds `migration-<id>.tar.gz`, as `wget -P` and `gh release download -D` do.
 */
function outputPath(output: string | undefined, id: number): string {
  const name = `migration-${id}.tar.gz`;
  if (output === undefined) return name;
  if (output.endsWith('/') || output.endsWith(sep)) return join(output, name);
  try {
    if (statSync(output).isDirectory()) return join(output, name);
  } catch {
    // Not there (yet): a file name. Any other problem is reported when it is written.
  }
  return output;
}

/** Where the archive goes before its migration id is known: the directory, and the file when `-o` names one. */
function destinationOf(output: string | undefined, force: boolean): Destination {
  const probe = outputPath(output, 0);
  const named = output !== undefined && probe === output;
  return { dir: dirname(probe), ...(named ? { file: output } : {}), force };
}

/**
 * The command that picks a download up where it stopped (docs/cli.md#download): the same output,
 * and every flag that decides where it goes, what is checked, or where the archive comes from. The
 * organization and base URL only when given as flags: from the environment or the config file they
 * hold on the next run too. Never the token.
 */
export function downloadCommand(settings: Settings, id: number, flags: DownloadFlags): string {
  const words = ['svc-migrate', 'download', String(id)];
  if (flags.output !== undefined) words.push('-o', flags.output);
  const { org, baseUrl } = settings;
  if (org.source === 'flag' && org.value) words.push('--org', org.value);
  if (baseUrl.source === 'flag' && baseUrl.value) words.push('--base-url', baseUrl.value);
  if (flags.force) words.push('--force');
  if (flags.checksum === false) words.push('--no-checksum');
  if (flags.verify === false) words.push('--no-verify');
  if (flags.maxSize !== undefined) words.push('--max-size', String(flags.maxSize));
  return words.map(shellWord).join(' ');
}

/**
 * Checks made before the first request. `-o -` on a terminal would fill it with gzip (which takes a
 * `reset` to undo): refused, as curl and gh refuse. `ways` names the commands that work instead.
 */
export function checkDownloadTarget(invocation: Invocation, flags: DownloadFlags, ways?: { pipe: string; save: string }): void {
  if (flags.output === '') throw new UsageError('-o/--output is empty', { hint: 'name a file or a directory, or - for stdout' });
  if (flags.output === '-' && invocation.stdoutIsTTY) {
    throw new UsageError('stdout is a terminal: not writing the archive there (-o -); pipe it or use -o FILE', {
      hint: ways
        ? `\`${ways.pipe} | tar -tz\` lists it; \`${ways.save}\` saves it`
        : 'pipe it (`… -o - | tar -tz`), or save it with -o FILE',
    });
  }
}

/** The download part of the options, and how its progress is shown. */
export function downloadSettings(
  context: Context,
  flags: DownloadFlags,
  command: (id: number) => string,
  /** Running the same command again continues the download (`download`; not `export`, which starts anew). */
  sameCommandResumes: boolean,
) {
  const toStdout = flags.output === '-';
  const bar = context.out.progress();
  let verifyBar: ReturnType<typeof context.out.progress> | undefined;
  let path: string | undefined;
  let told = false;
  const settings = {
    target: (id: number): CoreDownloadOptions['target'] => {
      if (toStdout) return { stream: context.io.stdout as NodeJS.WritableStream };
      path = outputPath(flags.output, id);
      return { path, force: Boolean(flags.force) };
    },
    checksum: flags.checksum !== false,
    ...(flags.maxSize === undefined ? {} : { maxSize: flags.maxSize }),
    verify:
      flags.verify === false
        ? false
        : {
            signal: context.signal,
            onProgress: (received: number, total: number) => {
              if (!verifyBar) {
                bar.done();
                verifyBar = context.out.progress();
              }
              verifyBar.update({ received, total, resumedFrom: 0 });
            },
          },
    resumeCommand: command,
    // On the progress line only (a terminal): pipes and --json see nothing of it.
    onWaiting: () =>
      bar.waiting(
        'waiting for storage',
        toStdout ? 'Ctrl-C stops' : sameCommandResumes ? 'Ctrl-C stops; the same command resumes' : 'Ctrl-C stops; the hint then says how to resume',
      ),
    onProgress: (progress: DownloadProgress) => {
      if (!told && progress.resumedFrom > 0) {
        context.out.info(`resuming ${path ?? 'the download'} from ${formatBytes(progress.resumedFrom)} (${progress.resumedFrom} bytes) already in ${path}.part`);
      }
      told = true;
      bar.update(progress);
    },
    onNotice: (message: string) => context.out.warn(message),
  };
  const bars = { done: () => (verifyBar ?? bar).done() };
  /** The checks of where the archive goes, to make before the first request (none for -o -). */
  const checkTarget = () => (toStdout ? Promise.resolve() : checkDestination(destinationOf(flags.output, Boolean(flags.force))));
  return { settings, bar: bars, toStdout, checkTarget };
}

/** An archive nobody checked must not pass for a safe one. */
export function warnIfUnverified(context: Context, verified: boolean, path: string): void {
  if (verified) return;
  context.out.warn(
    path === '-'
      ? 'the archive written to stdout was not verified; save it and run `svc-migrate archive verify <file>`'
      : `${path} was NOT verified (--no-verify); run \`svc-migrate archive verify ${path}\` before relying on it`,
  );
}

/** What `download` and `export` report of the archive, as docs/cli.md names its fields. */
export function archiveSummary(result: DownloadResult): Omit<DownloadSummary, 'migration_id'> {
  return {
    path: result.path,
    bytes: result.bytes,
    ...(result.sha256 ? { sha256: result.sha256 } : {}),
    verified: result.verified,
    ...(result.sha256File ? { sha256_file: result.sha256File } : {}),
  };
}
