import type { Command } from 'commander';
import type { Context, Runner } from '../../context.js';
import type { ExtractReport } from '../../core/archive/extract.js';
import { ArchiveVerificationError } from '../../core/archive/verify.js';
import { extractMessage, verifyMessage } from '../../ui/archive.js';
import { archiveReading } from '../common/archive-reading.js';
import { checkNotEmpty, examples, GIT_CHECK_TIME, gitCheckTime } from '../common/options.js';

interface ExtractFlags {
  force?: boolean;
  gitCheckTime?: string;
}

interface ExtractOptions {
  file: string;
  dir: string;
  force: boolean;
  gitTimeMs?: number;
}

function parseExtractOptions(file: string, dir: string, flags: ExtractFlags): ExtractOptions {
  // An empty DIR ("$UNSET") would be the current directory.
  checkNotEmpty(dir, 'the DIR argument', 'pass the directory to extract into, e.g. acme/ (. for the current directory)');
  const gitTimeMs = gitCheckTime(flags.gitCheckTime);
  return { file, dir, force: flags.force === true, ...(gitTimeMs === undefined ? {} : { gitTimeMs }) };
}

async function extract(context: Context, { file, dir, force, gitTimeMs }: ExtractOptions): Promise<ExtractReport> {
  const reading = archiveReading(context.out);
  let report: ExtractReport;
  try {
    // Loaded here, not at start-up: every other command would carry it (test/e2e/cli.test.ts).
    const { extractArchive } = await import('../../core/archive/extract.js');
    report = await extractArchive(file, dir, {
      force,
      ...(gitTimeMs === undefined ? {} : { gitTimeMs }),
      signal: context.signal,
      onProgress: reading.onProgress,
      onGitProgress: reading.onGitProgress,
    });
  } catch (error) {
    await reading.done();
    // The report first, as `archive verify` prints it: the error says how many problems, the report which.
    if (error instanceof ArchiveVerificationError) context.out.result(error.report, (data) => verifyMessage(data, context.out.theme));
    throw error;
  }
  await reading.done();
  context.out.result(report, (data) => extractMessage(data, context.out.theme));
  return report;
}

export function register(archive: Command, run: Runner): void {
  archive
    .command('extract')
    .description('write each repository of a verified archive as a bare repository DIR/<owner>/<repo>.git, and its metadata beside them (exit 9 if it fails: then nothing is written)')
    .argument('<file>', 'the .tar.gz archive')
    .argument('<dir>', 'a new or empty directory')
    .option('--force', 'DIR may hold files: each path the archive holds replaces the same path there; nothing else is touched')
    .option('--git-check-time <duration>', GIT_CHECK_TIME)
    .addHelpText('after', examples(['svc-migrate archive extract migration-4242.tar.gz acme/', 'svc-migrate archive extract acme.tar.gz acme/ --json | jq -r ".repositories[].path"']))
    .action((file: string, dir: string, flags: ExtractFlags, cmd: Command) =>
      run(
        cmd,
        () => parseExtractOptions(file, dir, flags),
        async (context, options) => {
          await extract(context, options);
        },
      ),
    );
}
