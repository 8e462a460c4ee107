import type { Command } from 'commander';
import type { Context, Runner } from '../context.js';
import { expectedContentOf } from '../core/archive/expected.js';
import { type InspectReport, inspectArchive } from '../core/archive/inspect.js';
import { ArchiveVerificationError, type VerifyReport, verifyArchive } from '../core/archive/verify.js';
import { UsageError, VerificationError } from '../errors.js';
import { parseDuration } from '../settings/resolve.js';
import { inspectMessage, inspectNotes, verifyMessage } from '../ui/archive.js';
import { examples, parseMigrationId } from './common/options.js';

interface VerifyFlags {
  migration?: number;
  gitCheck?: boolean;
  gitCheckTime?: string;
}

interface VerifyOptions {
  file: string;
  /** Also check that every repository of this migration is in it. */
  migration?: number;
  gitCheck: boolean;
  gitTimeMs?: number;
}

function parseVerifyOptions(file: string, flags: VerifyFlags): VerifyOptions {
  const gitTimeMs = flags.gitCheckTime === undefined ? undefined : parseDuration(flags.gitCheckTime, '--git-check-time');
  if (gitTimeMs === 0) throw new UsageError('--git-check-time takes a duration above 0 (`--no-git-check` skips the check)');
  return {
    file,
    ...(flags.migration === undefined ? {} : { migration: flags.migration }),
    gitCheck: flags.gitCheck !== false,
    ...(gitTimeMs === undefined ? {} : { gitTimeMs }),
  };
}

/** Checks an archive on disk; prints the report, then fails with exit 9 if anything is wrong. */
async function verify(context: Context, { file, migration, gitCheck, gitTimeMs }: VerifyOptions): Promise<VerifyReport> {
  const expected = migration === undefined ? undefined : await expectedContentOf(await context.api(), context.org(), migration);
  const bar = context.out.progress();
  let report: VerifyReport;
  try {
    report = await verifyArchive(file, {
      gitCheck,
      ...(gitTimeMs === undefined ? {} : { gitTimeMs }),
      ...(expected ? { expected } : {}),
      signal: context.signal,
      onProgress: (received, total) => bar.update({ received, total, resumedFrom: 0 }),
    });
  } finally {
    bar.done();
  }
  context.out.result(report, (data) => verifyMessage(data, context.out.theme));
  if (!report.ok) throw new ArchiveVerificationError(report, { hint: 'keep the service\'s copy of the archive; download it again, or report the problems above' });
  return report;
}

async function inspect(context: Context, file: string): Promise<InspectReport> {
  const bar = context.out.progress();
  let report: InspectReport;
  try {
    report = await inspectArchive(file, (received, total) => bar.update({ received, total, resumedFrom: 0 }));
  } finally {
    bar.done();
  }
  const { layout, json, theme } = context.out;
  // Off a terminal stdout is the table alone; what is said around it goes to stderr, as `export` does.
  const notes = layout.plain && !json ? inspectNotes(report, theme, true) : undefined;
  if (notes) context.out.info(notes.before);
  context.out.result(report, (data) => inspectMessage(data, theme, layout));
  if (notes) for (const line of notes.after) context.out.info(line);
  if (!report.complete) {
    throw new VerificationError(`${file} could not be read to its end`, { hint: `run \`svc-migrate archive verify ${file}\`` });
  }
  return report;
}

export function register(program: Command, run: Runner): void {
  const archive = program
    .command('archive')
    .description('check or look into a downloaded migration archive (offline)')
    .addHelpText('after', examples(['svc-migrate archive verify migration-4242.tar.gz', 'svc-migrate archive inspect migration-4242.tar.gz']));
  archive
    .command('verify')
    .description('check an archive end to end: gzip and tar, safe paths, metadata, git objects (exit 9 if it fails)')
    .argument('<file>', 'the .tar.gz archive')
    .option('--migration <id>', 'also check that every repository of this migration is in it (asks the service)', parseMigrationId)
    .option('--no-git-check', 'skip the git object check (git fsck); structure and metadata are still checked')
    .option('--git-check-time <duration>', 'the time git may take for the whole archive (default: 2m, plus 1s per MiB of the archive and 0.1s per repository)')
    .addHelpText(
      'after',
      examples(['svc-migrate archive verify migration-4242.tar.gz', 'svc-migrate archive verify acme.tar.gz --migration 4242 --json']),
    )
    .action((file: string, flags: VerifyFlags, cmd: Command) =>
      run(
        cmd,
        () => parseVerifyOptions(file, flags),
        async (context, options) => {
          await verify(context, options);
        },
      ),
    );
  archive
    .command('inspect')
    .description('show what an archive holds: organization, repositories (refs, size) and metadata counts')
    .argument('<file>', 'the .tar.gz archive')
    .addHelpText(
      'after',
      examples([
        'svc-migrate archive inspect migration-4242.tar.gz',
        'svc-migrate archive inspect acme.tar.gz --json | jq .repositories',
      ]),
    )
    .action((file: string, _flags: unknown, cmd: Command) =>
      run(
        cmd,
        () => ({ file }),
        async (context, options) => {
          await inspect(context, options.file);
        },
      ),
    );
}
