import type { Command } from 'commander';
import type { Context, Runner } from '../../context.js';
import { expectedContentOf } from '../../core/archive/expected.js';
import { ArchiveVerificationError, type VerifyReport, verifyArchive } from '../../core/archive/verify.js';
import { verifyMessage } from '../../ui/archive.js';
import { archiveReading } from '../common/archive-reading.js';
import { examples, GIT_CHECK_TIME, gitCheckTime, parseMigrationId } from '../common/options.js';

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
  const gitTimeMs = gitCheckTime(flags.gitCheckTime, ' (`--no-git-check` skips the check)');
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
  const reading = archiveReading(context.out);
  let report: VerifyReport;
  try {
    report = await verifyArchive(file, {
      gitCheck,
      ...(gitTimeMs === undefined ? {} : { gitTimeMs }),
      ...(expected ? { expected } : {}),
      signal: context.signal,
      onProgress: reading.onProgress,
      onGitProgress: reading.onGitProgress,
    });
  } finally {
    await reading.done();
  }
  context.out.result(report, (data) => verifyMessage(data, context.out.theme));
  if (!report.ok) throw new ArchiveVerificationError(report, { hint: 'keep the service\'s copy of the archive; download it again, or report the problems above' });
  return report;
}

export function register(archive: Command, run: Runner): void {
  archive
    .command('verify')
    .description('check an archive end to end: gzip and tar, safe paths, metadata, git objects (exit 9 if it fails)')
    .argument('<file>', 'the .tar.gz archive')
    .option('--migration <id>', 'also check that every repository of this migration is in it (asks the service)', parseMigrationId)
    .option('--no-git-check', 'skip the git object check (git fsck); structure and metadata are still checked')
    .option('--git-check-time <duration>', GIT_CHECK_TIME)
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
}
