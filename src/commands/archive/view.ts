import type { Command } from 'commander';
import type { Context, Runner } from '../../context.js';
import { ArchiveVerificationError } from '../../core/archive/verify.js';
import type { ViewReport } from '../../core/view/site.js';
import { verifyMessage, viewMessage } from '../../ui/archive.js';
import { archiveReading } from '../common/archive-reading.js';
import { checkNotEmpty, examples } from '../common/options.js';

interface ViewFlags {
  output?: string;
  force?: boolean;
  verify?: boolean;
}

interface ViewOptions {
  file: string;
  dir: string;
  force: boolean;
  verify: boolean;
}

function parseViewOptions(file: string, flags: ViewFlags): ViewOptions {
  // An empty DIR ("$UNSET") would be the current directory.
  checkNotEmpty(flags.output, '-o/--output', 'pass the directory to write the site to, e.g. -o acme-site/');
  return { file, dir: flags.output as string, force: flags.force === true, verify: flags.verify !== false };
}

async function view(context: Context, { file, dir, force, verify }: ViewOptions): Promise<ViewReport> {
  const reading = archiveReading(context.out);
  // Loaded here: markdown-it and the pages cost every other command nothing.
  const { viewArchive } = await import('../../core/view/site.js');
  let report: ViewReport;
  try {
    report = await viewArchive(file, dir, {
      force, verify, signal: context.signal, onProgress: reading.onProgress, onGitProgress: reading.onGitProgress,
    });
  } catch (error) {
    await reading.done();
    if (error instanceof ArchiveVerificationError) context.out.result(error.report, (data) => verifyMessage(data, context.out.theme));
    throw error;
  }
  await reading.done();
  context.out.result(report, (data) => viewMessage(data, context.out.theme));
  return report;
}

export function register(archive: Command, run: Runner): void {
  archive
    .command('view')
    .description('write the issues, pull requests, reviews and releases of a verified archive as a static site that opens from disk (exit 9 if it fails: then nothing is written)')
    .argument('<file>', 'the .tar.gz archive')
    .requiredOption('-o, --output <dir>', 'a new or empty directory for the site')
    .option('--force', 'DIR may hold files: each file of the site replaces the same path there; nothing else is touched')
    .option('--no-verify', 'read the archive without verifying it (no git check): every page then says it was NOT verified')
    .addHelpText('after', examples(['svc-migrate archive view migration-4242.tar.gz -o acme-site/', 'svc-migrate archive view acme.tar.gz -o site/ --json | jq ".repositories[] | {name, issues}"']))
    .action((file: string, flags: ViewFlags, cmd: Command) =>
      run(
        cmd,
        () => parseViewOptions(file, flags),
        async (context, options) => {
          await view(context, options);
        },
      ),
    );
}
